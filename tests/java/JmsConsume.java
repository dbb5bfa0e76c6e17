import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.Enumeration;
import java.util.List;
import javax.jms.BytesMessage;
import javax.jms.Connection;
import javax.jms.Destination;
import javax.jms.JMSException;
import javax.jms.MapMessage;
import javax.jms.Message;
import javax.jms.MessageConsumer;
import javax.jms.ObjectMessage;
import javax.jms.Queue;
import javax.jms.QueueBrowser;
import javax.jms.Session;
import javax.jms.StreamMessage;
import javax.jms.TextMessage;
import javax.jms.Topic;

/**
 * A JMS consumer for the live tests: prints, one JSON line per message, what a JMS application
 * sees (its getJMS...() headers, its class, every property by getStringProperty, its body), so
 * that a test compares msgcap's headers with it.
 *
 * <pre>
 * JmsConsume --url URL [--factory CLASS] [--user U --password P] [--client-id ID]
 *   (--queue NAME | --topic NAME | --destination /queue/NAME)
 *   [--selector SELECTOR]
 *   [--browse]             look without consuming (a QueueBrowser)
 *   [--durable NAME]       a durable subscription NAME to the topic (needs --client-id)
 *   [--count N]            stop after N messages
 *   [--timeout MS]         stop once no message came for MS (default 2000)
 * </pre>
 * Consumed messages are acknowledged (AUTO_ACKNOWLEDGE). Each line holds JMSMessageID,
 * JMSCorrelationID, JMSTimestamp, JMSType, JMSPriority, JMSExpiration, JMSRedelivered,
 * JMSDeliveryMode, JMSDestination and JMSReplyTo (toString), "class" (TextMessage, ...),
 * JMSXGroupID, JMSXGroupSeq, JMSXUserID and JMSXDeliveryCount (getStringProperty, whether
 * or not getPropertyNames lists them), "properties" (name: getStringProperty, null as null;
 * a property getStringProperty refuses is in "refusedProperties", name: the exception),
 * "propertyTypes" (name: the class of getObjectProperty), "propertyObjects" (name:
 * String.valueOf(getObjectProperty), a Date as its epoch milliseconds) and the body: "text",
 * "bytes" (base64), "map" (name: getString), "stream" (items as String.valueOf) or "object"
 * (String.valueOf).
 */
public final class JmsConsume {
    private JmsConsume() {
    }

    public static void main(String[] args) {
        JmsClient.main("JmsConsume", () -> consume(new JmsClient.Options(args,
                List.of("browse"))));
    }

    static void consume(JmsClient.Options o) throws Exception {
        int count = o.integer("count", Integer.MAX_VALUE);
        long timeout = o.integer("timeout", 2000);
        String selector = o.get("selector");
        try (Connection connection = JmsClient.connect(o)) {
            Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
            Destination destination = JmsClient.destination(session, o);
            connection.start();
            int seen = 0;
            if (o.has("browse")) {
                QueueBrowser browser = session.createBrowser((Queue) destination, selector);
                Enumeration<?> all = browser.getEnumeration();
                while (seen < count && all.hasMoreElements()) {
                    System.out.println(describe((Message) all.nextElement()));
                    seen++;
                }
                return;
            }
            MessageConsumer consumer = o.has("durable")
                    ? session.createDurableSubscriber((Topic) destination, o.get("durable"),
                            selector, false)
                    : session.createConsumer(destination, selector);
            while (seen < count) {
                Message message = consumer.receive(timeout);
                if (message == null) {
                    break;
                }
                System.out.println(describe(message));
                seen++;
            }
        }
    }

    /** The JMS-defined properties a provider may keep outside getPropertyNames. */
    private static final List<String> JMSX = List.of("JMSXGroupID", "JMSXGroupSeq",
            "JMSXUserID", "JMSXDeliveryCount");

    /** getStringProperty, or null where the provider refuses the name. */
    private static String stringProperty(Message m, String name) {
        try {
            return m.getStringProperty(name);
        } catch (JMSException | RuntimeException e) {
            return null;
        }
    }

    /** One message as a JSON object (see the class doc). */
    static String describe(Message m) throws JMSException {
        StringBuilder out = new StringBuilder("{");
        field(out, "JMSMessageID", JmsClient.json(m.getJMSMessageID()));
        field(out, "JMSCorrelationID", JmsClient.json(m.getJMSCorrelationID()));
        field(out, "JMSTimestamp", Long.toString(m.getJMSTimestamp()));
        field(out, "JMSType", JmsClient.json(m.getJMSType()));
        field(out, "JMSPriority", Integer.toString(m.getJMSPriority()));
        field(out, "JMSExpiration", Long.toString(m.getJMSExpiration()));
        field(out, "JMSRedelivered", Boolean.toString(m.getJMSRedelivered()));
        field(out, "JMSDeliveryMode", Integer.toString(m.getJMSDeliveryMode()));
        field(out, "JMSDestination", JmsClient.json(text(m.getJMSDestination())));
        field(out, "JMSReplyTo", JmsClient.json(text(m.getJMSReplyTo())));
        field(out, "class", JmsClient.json(kind(m)));
        for (String name : JMSX) {
            field(out, name, JmsClient.json(stringProperty(m, name)));
        }
        StringBuilder props = new StringBuilder("{");
        StringBuilder types = new StringBuilder("{");
        StringBuilder objects = new StringBuilder("{");
        StringBuilder refused = new StringBuilder("{");
        List<String> names = new ArrayList<>();
        for (Enumeration<?> e = m.getPropertyNames(); e.hasMoreElements(); ) {
            names.add((String) e.nextElement());
        }
        Collections.sort(names);
        for (String name : names) {
            Object value = m.getObjectProperty(name);
            field(types, name, JmsClient.json(value == null ? null
                    : value.getClass().getSimpleName()));
            field(objects, name, JmsClient.json(value == null ? null
                    : value instanceof java.util.Date date ? Long.toString(date.getTime())
                    : String.valueOf(value)));
            try {
                field(props, name, JmsClient.json(m.getStringProperty(name)));
            } catch (JMSException | RuntimeException e) {
                field(refused, name, JmsClient.json(e.toString()));
            }
        }
        field(out, "properties", props.append('}').toString());
        field(out, "propertyTypes", types.append('}').toString());
        field(out, "propertyObjects", objects.append('}').toString());
        field(out, "refusedProperties", refused.append('}').toString());
        body(out, m);
        return out.append('}').toString();
    }

    private static void body(StringBuilder out, Message m) throws JMSException {
        if (m instanceof TextMessage text) {
            field(out, "text", JmsClient.json(text.getText()));
        } else if (m instanceof BytesMessage bytes) {
            byte[] data = new byte[(int) bytes.getBodyLength()];
            bytes.readBytes(data);
            field(out, "bytes", JmsClient.json(Base64.getEncoder().encodeToString(data)));
        } else if (m instanceof MapMessage map) {
            StringBuilder entries = new StringBuilder("{");
            List<String> names = new ArrayList<>();
            for (Enumeration<?> e = map.getMapNames(); e.hasMoreElements(); ) {
                names.add((String) e.nextElement());
            }
            Collections.sort(names);
            for (String name : names) {
                field(entries, name, JmsClient.json(map.getString(name)));
            }
            field(out, "map", entries.append('}').toString());
        } else if (m instanceof StreamMessage stream) {
            StringBuilder items = new StringBuilder("[");
            try {
                while (true) {
                    Object item = stream.readObject();
                    if (items.length() > 1) {
                        items.append(',');
                    }
                    items.append(JmsClient.json(String.valueOf(item)));
                }
            } catch (javax.jms.MessageEOFException end) {
                field(out, "stream", items.append(']').toString());
            }
        } else if (m instanceof ObjectMessage object) {
            field(out, "object", JmsClient.json(String.valueOf(object.getObject())));
        }
    }

    private static String kind(Message m) {
        for (Class<?> type : List.of(TextMessage.class, BytesMessage.class, MapMessage.class,
                StreamMessage.class, ObjectMessage.class)) {
            if (type.isInstance(m)) {
                return type.getSimpleName();
            }
        }
        return "Message";
    }

    private static String text(Destination destination) {
        return destination == null ? null : destination.toString();
    }

    private static void field(StringBuilder out, String name, String jsonValue) {
        if (out.length() > 1) {
            out.append(',');
        }
        out.append(JmsClient.json(name)).append(':').append(jsonValue);
    }
}
