import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import javax.jms.BytesMessage;
import javax.jms.Connection;
import javax.jms.DeliveryMode;
import javax.jms.MapMessage;
import javax.jms.Message;
import javax.jms.MessageProducer;
import javax.jms.Session;
import javax.jms.StreamMessage;

/**
 * A JMS producer for the live tests: what an application on the JMS API sends, through the
 * provider of --url (Qpid JMS for amqp://, the Artemis core client for tcp://, or --factory).
 *
 * <pre>
 * JmsProduce --url URL [--factory CLASS] [--user U --password P] [--client-id ID]
 *   (--queue NAME | --topic NAME | --destination /queue/NAME)
 *   [--count N] [--first N]            messages numbered first.. (default 1 message, from 1)
 *   [--type text|bytes|map|stream|object|message]          (default text)
 *   [--body TEMPLATE | --body-file FILE]                     (default "message {n}")
 *   [--bodies FILE]     one message a line, "text BASE64" or "bytes BASE64" (--count ignored)
 *   [--prop NAME=TYPE:VALUE]...         typed properties (boolean byte short int long float
 *                                       double string); VALUE a template
 *   [--entry NAME=TYPE:VALUE]...        a MapMessage's entries (a template)
 *   [--entry TYPE:VALUE]...             a StreamMessage's items, in order (a template)
 *   [--group ID]                        JMSXGroupID ID (a template), JMSXGroupSeq 1, 2, ...
 *   [--correlation-id TEMPLATE] [--jms-type TYPE] [--priority 0-9] [--ttl MS]
 *   [--reply-to /queue/NAME] [--non-persistent] [--batch N (transacted, commit every N)]
 *   [--ids]                             print each JMSMessageID
 * </pre>
 * Templates hold the message number as {n} or {n:FORMAT} (String.format, e.g. {n:010d}); a
 * --body-file is a template for text and object messages, sent as is for bytes.
 * Prints "sent N messages" once all are sent (and committed).
 */
public final class JmsProduce {
    private JmsProduce() {
    }

    public static void main(String[] args) {
        JmsClient.main("JmsProduce", () -> produce(new JmsClient.Options(args,
                List.of("non-persistent", "ids"))));
    }

    /** One message to send: its kind and body (a template or the bytes of a file). */
    private record Item(String type, byte[] body) {
    }

    static void produce(JmsClient.Options o) throws Exception {
        int batch = o.integer("batch", 0);
        List<Item> items = items(o);
        long first = o.integer("first", 1);
        try (Connection connection = JmsClient.connect(o)) {
            Session session = connection.createSession(batch > 0,
                    batch > 0 ? Session.SESSION_TRANSACTED : Session.AUTO_ACKNOWLEDGE);
            MessageProducer producer = session.createProducer(JmsClient.destination(session, o));
            producer.setDeliveryMode(o.has("non-persistent") ? DeliveryMode.NON_PERSISTENT
                    : DeliveryMode.PERSISTENT);
            if (o.has("priority")) {
                producer.setPriority(o.integer("priority", 4));
            }
            if (o.has("ttl")) {
                producer.setTimeToLive(Long.parseLong(o.get("ttl")));
            }
            int sent = 0;
            for (Item item : items) {
                long n = first + sent;
                Message message = message(session, o, item, n);
                message.setJMSCorrelationID(o.has("correlation-id")
                        ? JmsClient.fill(o.get("correlation-id"), n) : null);
                if (o.has("jms-type")) {
                    message.setJMSType(o.get("jms-type"));
                }
                if (o.has("reply-to")) {
                    message.setJMSReplyTo(JmsClient.named(session, o.get("reply-to")));
                }
                if (o.has("group")) {
                    message.setStringProperty("JMSXGroupID", JmsClient.fill(o.get("group"), n));
                    message.setIntProperty("JMSXGroupSeq", sent + 1);
                }
                for (String prop : o.all("prop")) {
                    int eq = prop.indexOf('=');
                    message.setObjectProperty(prop.substring(0, eq),
                            JmsClient.typed(JmsClient.fill(prop.substring(eq + 1), n)));
                }
                producer.send(message);
                sent++;
                if (o.has("ids")) {
                    System.out.println(message.getJMSMessageID());
                }
                if (batch > 0 && sent % batch == 0) {
                    session.commit();
                }
            }
            if (batch > 0) {
                session.commit();
            }
            System.out.println("sent " + sent + " messages");
        }
    }

    private static List<Item> items(JmsClient.Options o) throws Exception {
        List<Item> items = new ArrayList<>();
        if (o.has("bodies")) {
            for (String line : Files.readAllLines(Path.of(o.get("bodies")))) {
                if (!line.isEmpty()) {
                    String[] parts = line.split(" ", 2);
                    items.add(new Item(parts[0], Base64.getDecoder().decode(parts[1])));
                }
            }
            return items;
        }
        byte[] body = o.has("body-file") ? Files.readAllBytes(Path.of(o.get("body-file")))
                : o.get("body", "message {n}").getBytes(StandardCharsets.UTF_8);
        for (int i = 0; i < o.integer("count", 1); i++) {
            items.add(new Item(o.get("type", "text"), body));
        }
        return items;
    }

    /** The message of one item; text bodies (and a file's, but for bytes) are templates. */
    private static Message message(Session session, JmsClient.Options o, Item item, long n)
            throws Exception {
        boolean template = !o.has("bodies");
        String text = new String(item.body(), StandardCharsets.UTF_8);
        if (template) {
            text = JmsClient.fill(text, n);
        }
        switch (item.type()) {
            case "text":
                return session.createTextMessage(text);
            case "bytes": {
                BytesMessage message = session.createBytesMessage();
                message.writeBytes(template && !o.has("body-file")
                        ? text.getBytes(StandardCharsets.UTF_8) : item.body());
                return message;
            }
            case "map": {
                MapMessage message = session.createMapMessage();
                for (String entry : o.all("entry")) {
                    int eq = entry.indexOf('=');
                    message.setObject(entry.substring(0, eq),
                            JmsClient.typed(JmsClient.fill(entry.substring(eq + 1), n)));
                }
                return message;
            }
            case "stream": {
                StreamMessage message = session.createStreamMessage();
                for (String entry : o.all("entry")) {
                    message.writeObject(JmsClient.typed(JmsClient.fill(entry, n)));
                }
                return message;
            }
            case "object":
                return session.createObjectMessage((Serializable) text);
            case "message":
                return session.createMessage();
            default:
                throw new IllegalArgumentException("unknown message type " + item.type());
        }
    }
}
