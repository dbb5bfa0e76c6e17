import java.util.List;
import javax.jms.Connection;
import javax.jms.Message;
import javax.jms.MessageConsumer;
import javax.jms.Session;

/**
 * A bare JMS consumer for benchmarks: what a plain JMS application reaches on the same broker,
 * to set msgcap's rate beside. Client acknowledge, one acknowledge per group of --ack messages;
 * nothing is done with a message but counting it.
 *
 * <pre>
 * JmsBench --url URL [--factory CLASS] [--user U --password P]
 *   (--queue NAME | --destination /queue/NAME) [--ack N (default 1000)]
 *   [--count N (stop after N)] [--timeout MS (stop once none came for MS, default 2000)]
 * </pre>
 * Prints "received N messages in S s: R messages/s", the time from the first message to the
 * last acknowledgement.
 */
public final class JmsBench {
    private JmsBench() {
    }

    public static void main(String[] args) {
        JmsClient.main("JmsBench", () -> bench(new JmsClient.Options(args, List.of())));
    }

    static void bench(JmsClient.Options o) throws Exception {
        int group = o.integer("ack", 1000);
        int count = o.integer("count", Integer.MAX_VALUE);
        long timeout = o.integer("timeout", 2000);
        try (Connection connection = JmsClient.connect(o)) {
            Session session = connection.createSession(false, Session.CLIENT_ACKNOWLEDGE);
            MessageConsumer consumer = session.createConsumer(JmsClient.destination(session, o));
            connection.start();
            long received = 0;
            long start = 0;
            Message last = null;
            while (received < count) {
                Message message = consumer.receive(timeout);
                if (message == null) {
                    break;
                }
                if (received == 0) {
                    start = System.nanoTime();
                }
                received++;
                last = message;
                if (received % group == 0) {
                    message.acknowledge();
                    last = null;
                }
            }
            if (last != null) {
                last.acknowledge();
            }
            double seconds = received == 0 ? 0 : (System.nanoTime() - start) / 1e9;
            System.out.printf("received %d messages in %.3f s: %.0f messages/s%n", received,
                    seconds, seconds > 0 ? received / seconds : 0.0);
        }
    }
}
