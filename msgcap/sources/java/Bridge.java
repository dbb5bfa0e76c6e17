package msgcap.jvm;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.ObjectOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import javax.jms.BytesMessage;
import javax.jms.DeliveryMode;
import javax.jms.Destination;
import javax.jms.JMSException;
import javax.jms.MapMessage;
import javax.jms.Message;
import javax.jms.MessageConsumer;
import javax.jms.MessageEOFException;
import javax.jms.MessageProducer;
import javax.jms.ObjectMessage;
import javax.jms.Queue;
import javax.jms.Session;
import javax.jms.StreamMessage;
import javax.jms.TextMessage;
import javax.jms.Topic;

/**
 * msgcap's side of the JMS source (msgcap/sources/jms.py): what would cost a crossing of the
 * Python-Java seam per header is done here, once per batch of messages.
 *
 * <p>{@link #drain} receives up to a batch and packs it into one byte array: a JSON array of
 * the messages' headers (under msgcap's names, rendered as the JMS getters return them), then
 * per message its kind (one byte), the body's length (an int, -1: over the size limit, the
 * body not copied) and the body (text as UTF-8). The received messages stay here until
 * {@link #acknowledge}, so that a dead letter is the message itself resent ({@link #resend}).
 *
 * <p>The source is compiled by msgcap against the provider's jars, with javax.jms replaced by
 * jakarta.jms when the provider's jars are Jakarta Messaging 3.
 */
public final class Bridge {
    public static final byte TEXT = 'T', BYTES = 'B', MAP = 'M', STREAM = 'S', OBJECT = 'O',
            EMPTY = 'N', BROKEN = 'X';

    private final Session session;
    private final MessageConsumer consumer;
    private final int maxBytes;
    private final String[] fields;  // the header keys of the FIELDS, from msgcap's table
    private final List<Message> unacknowledged = new ArrayList<>();
    private long acknowledgedBefore;  // the sequence number of unacknowledged.get(0)

    /** fields: msgcap's header keys for JMSMessageID, JMSCorrelationID, JMSTimestamp, JMSType,
     *  JMSPriority, JMSExpiration, JMSReplyTo, JMSDestination, JMSRedelivered,
     *  JMSDeliveryMode and the message's JMS type, in this order (msgcap/sources/jms.py). */
    public Bridge(Session session, MessageConsumer consumer, int maxBytes, String[] fields) {
        this.session = session;
        this.consumer = consumer;
        this.maxBytes = maxBytes;
        this.fields = fields.clone();
    }

    /** The sequence number (0-based since this bridge began) of the next message drained. */
    public long received() {
        return acknowledgedBefore + unacknowledged.size();
    }

    /** Up to max messages, waiting up to timeoutMs for the first (0: not at all); null if none. */
    public byte[] drain(int max, long timeoutMs) throws JMSException, IOException {
        List<Message> batch = new ArrayList<>();
        Message first = timeoutMs > 0 ? consumer.receive(timeoutMs) : consumer.receiveNoWait();
        if (first == null) {
            return null;
        }
        batch.add(first);
        while (batch.size() < max) {
            Message next = consumer.receiveNoWait();
            if (next == null) {
                break;
            }
            batch.add(next);
        }
        unacknowledged.addAll(batch);
        StringBuilder headers = new StringBuilder(256 * batch.size()).append('[');
        ByteArrayOutputStream bodies = new ByteArrayOutputStream(1024 * batch.size());
        DataOutputStream out = new DataOutputStream(bodies);
        for (int i = 0; i < batch.size(); i++) {
            if (i > 0) {
                headers.append(',');
            }
            Message message = batch.get(i);
            headers(message, headers);
            body(message, out);
        }
        byte[] json = headers.append(']').toString().getBytes(StandardCharsets.UTF_8);
        ByteArrayOutputStream packed = new ByteArrayOutputStream(json.length + bodies.size() + 4);
        new DataOutputStream(packed).writeInt(json.length);
        packed.write(json);
        bodies.writeTo(packed);
        return packed.toByteArray();
    }

    /** Acknowledge every message received so far (JMS acknowledges the session's, all). */
    public void acknowledge() throws JMSException {
        if (!unacknowledged.isEmpty()) {
            unacknowledged.get(unacknowledged.size() - 1).acknowledge();
            acknowledgedBefore += unacknowledged.size();
            unacknowledged.clear();
        }
    }

    /** Resend received message number seq, as it came, persistent, with these properties
     *  (name, value, ...) added; returns once the provider's send returns. */
    public void resend(MessageProducer producer, long seq, String[] extra) throws JMSException {
        int index = (int) (seq - acknowledgedBefore);
        if (index < 0 || index >= unacknowledged.size()) {
            throw new IllegalStateException("message " + seq + " is no longer held");
        }
        Message message = unacknowledged.get(index);
        List<Object[]> kept = new ArrayList<>();
        for (Enumeration<?> names = message.getPropertyNames(); names.hasMoreElements(); ) {
            String name = (String) names.nextElement();
            kept.add(new Object[] {name, message.getObjectProperty(name)});
        }
        message.clearProperties();  // properties of a received message are read-only
        for (Object[] property : kept) {
            if (!((String) property[0]).startsWith("JMSX")) {
                message.setObjectProperty((String) property[0], property[1]);
            }
        }
        setAll(message, extra);
        producer.send(message, DeliveryMode.PERSISTENT, message.getJMSPriority(), 0);
    }

    /** A new text (body null: bytes) message with these properties, sent persistent. */
    public static void send(Session session, MessageProducer producer, String text, byte[] bytes,
                            String[] properties, int priority, String correlationId,
                            String type) throws JMSException {
        Message message;
        if (bytes != null) {
            BytesMessage out = session.createBytesMessage();
            out.writeBytes(bytes);
            message = out;
        } else {
            message = session.createTextMessage(text);
        }
        if (correlationId != null) {
            message.setJMSCorrelationID(correlationId);
        }
        if (type != null) {
            message.setJMSType(type);
        }
        setAll(message, properties);
        producer.send(message, DeliveryMode.PERSISTENT, priority, 0);
    }

    private static void setAll(Message message, String[] properties) throws JMSException {
        for (int i = 0; i + 1 < properties.length; i += 2) {
            message.setStringProperty(properties[i], properties[i + 1]);
        }
    }

    // -- packing --------------------------------------------------------------------------------

    private static final String[] JMSX = {"JMSXGroupID", "JMSXGroupSeq", "JMSXUserID",
            "JMSXDeliveryCount"};

    private void headers(Message m, StringBuilder out) throws JMSException {
        out.append('{');
        int before = out.length();
        java.util.Set<String> seen = new java.util.HashSet<>();
        for (Enumeration<?> names = m.getPropertyNames(); names.hasMoreElements(); ) {
            String name = (String) names.nextElement();
            seen.add(name);
            pair(out, before, name, m.getStringProperty(name));
        }
        for (String name : JMSX) {
            if (seen.contains(name)) {
                continue;
            }
            String value;
            try {
                value = m.getStringProperty(name);
            } catch (JMSException | RuntimeException notThere) {
                value = null;
            }
            pair(out, before, name, value);
        }
        pair(out, before, fields[0], m.getJMSMessageID());
        pair(out, before, fields[1], m.getJMSCorrelationID());
        long timestamp = m.getJMSTimestamp();
        pair(out, before, fields[2], timestamp != 0 ? Long.toString(timestamp) : null);
        pair(out, before, fields[3], m.getJMSType());
        pair(out, before, fields[4], Integer.toString(m.getJMSPriority()));
        long expires = m.getJMSExpiration();
        pair(out, before, fields[5], expires != 0 ? Long.toString(expires) : null);
        pair(out, before, fields[6], destination(m.getJMSReplyTo()));
        pair(out, before, fields[7], destination(m.getJMSDestination()));
        pair(out, before, fields[8], Boolean.toString(m.getJMSRedelivered()));
        pair(out, before, fields[9],
                m.getJMSDeliveryMode() == DeliveryMode.PERSISTENT ? "true" : null);
        pair(out, before, fields[10], kindName(m));
        out.append('}');
    }

    private static String kindName(Message m) {
        if (m instanceof TextMessage) return "TextMessage";
        if (m instanceof BytesMessage) return "BytesMessage";
        if (m instanceof MapMessage) return "MapMessage";
        if (m instanceof StreamMessage) return "StreamMessage";
        if (m instanceof ObjectMessage) return "ObjectMessage";
        return "Message";
    }

    /** A destination as msgcap names it everywhere: /queue/NAME or /topic/NAME. */
    static String destination(Destination d) throws JMSException {
        if (d instanceof Queue) return "/queue/" + ((Queue) d).getQueueName();
        if (d instanceof Topic) return "/topic/" + ((Topic) d).getTopicName();
        return d == null ? null : d.toString();
    }

    private static void pair(StringBuilder out, int start, String name, String value) {
        if (value == null) {
            return;
        }
        if (out.length() > start) {
            out.append(',');
        }
        string(out, name);
        out.append(':');
        string(out, value);
    }

    private static void string(StringBuilder out, String s) {
        out.append('"');
        for (int i = 0, n = s.length(); i < n; i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20 || Character.isSurrogate(c)) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        out.append('"');
    }

    private void body(Message m, DataOutputStream out) throws IOException {
        byte kind;
        byte[] data;
        try {
            if (m instanceof TextMessage) {
                kind = TEXT;
                String text = ((TextMessage) m).getText();
                data = text == null ? new byte[0] : text.getBytes(StandardCharsets.UTF_8);
            } else if (m instanceof BytesMessage) {
                kind = BYTES;
                BytesMessage bytes = (BytesMessage) m;
                long length = bytes.getBodyLength();
                if (length > maxBytes) {
                    out.writeByte(kind);
                    out.writeInt(-1);
                    out.writeLong(length);
                    return;
                }
                data = new byte[(int) length];
                bytes.readBytes(data);
                bytes.reset();
            } else if (m instanceof MapMessage) {
                kind = MAP;
                data = mapJson((MapMessage) m).getBytes(StandardCharsets.UTF_8);
            } else if (m instanceof StreamMessage) {
                kind = STREAM;
                data = streamJson((StreamMessage) m).getBytes(StandardCharsets.UTF_8);
            } else if (m instanceof ObjectMessage) {
                kind = OBJECT;
                ByteArrayOutputStream serialized = new ByteArrayOutputStream();
                try (ObjectOutputStream objects = new ObjectOutputStream(serialized)) {
                    objects.writeObject(((ObjectMessage) m).getObject());
                }
                data = serialized.toByteArray();
            } else {
                kind = EMPTY;
                data = new byte[0];
            }
        } catch (JMSException | RuntimeException | IOException unreadable) {
            kind = BROKEN;
            data = String.valueOf(unreadable).getBytes(StandardCharsets.UTF_8);
        }
        if (kind == TEXT && data.length > maxBytes) {
            out.writeByte(kind);
            out.writeInt(-1);
            out.writeLong(data.length);
            return;
        }
        out.writeByte(kind);
        out.writeInt(data.length);
        out.write(data);
    }

    private static String mapJson(MapMessage m) throws JMSException {
        StringBuilder out = new StringBuilder("{");
        for (Enumeration<?> names = m.getMapNames(); names.hasMoreElements(); ) {
            String name = (String) names.nextElement();
            if (out.length() > 1) {
                out.append(',');
            }
            string(out, name);
            out.append(':');
            value(out, m.getObject(name));
        }
        return out.append('}').toString();
    }

    private static String streamJson(StreamMessage m) throws JMSException {
        StringBuilder out = new StringBuilder("[");
        try {
            while (true) {
                Object item = m.readObject();
                if (out.length() > 1) {
                    out.append(',');
                }
                value(out, item);
            }
        } catch (MessageEOFException end) {
            m.reset();
        }
        return out.append(']').toString();
    }

    /** A map or stream item in JSON: numbers and booleans as such, bytes in Base64. */
    private static void value(StringBuilder out, Object item) {
        if (item == null) {
            out.append("null");
        } else if (item instanceof Boolean || item instanceof Long || item instanceof Integer
                || item instanceof Short || item instanceof Byte) {
            out.append(item);
        } else if (item instanceof byte[]) {
            string(out, java.util.Base64.getEncoder().encodeToString((byte[]) item));
        } else {
            string(out, String.valueOf(item));
        }
    }
}
