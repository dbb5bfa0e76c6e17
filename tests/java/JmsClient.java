import java.lang.reflect.Constructor;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.jms.Connection;
import javax.jms.ConnectionFactory;
import javax.jms.Destination;
import javax.jms.JMSException;
import javax.jms.Session;

/**
 * What the test producers and consumers share: their options, the connection factory of a URL
 * (a provider reached by reflection, so these programs compile against the JMS API alone and run
 * with any provider's jars), destinations, templates and JSON text.
 */
final class JmsClient {
    /** The ConnectionFactory class of a URL scheme, unless --factory names one. */
    static final Map<String, String> FACTORIES = Map.of(
            "amqp", "org.apache.qpid.jms.JmsConnectionFactory",
            "amqps", "org.apache.qpid.jms.JmsConnectionFactory",
            "failover", "org.apache.qpid.jms.JmsConnectionFactory",
            "tcp", "org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory");

    private JmsClient() {
    }

    /** Options as --name value pairs (a repeated name keeps every value), flags as "true". */
    static final class Options {
        final Map<String, List<String>> values = new LinkedHashMap<>();

        Options(String[] args, List<String> flags) {
            for (int i = 0; i < args.length; i++) {
                String arg = args[i];
                if (!arg.startsWith("--")) {
                    throw new IllegalArgumentException("not an option: " + arg);
                }
                String name = arg.substring(2);
                String value;
                if (flags.contains(name)) {
                    value = "true";
                } else if (i + 1 < args.length) {
                    value = args[++i];
                } else {
                    throw new IllegalArgumentException(arg + " needs a value");
                }
                values.computeIfAbsent(name, k -> new ArrayList<>()).add(value);
            }
        }

        String get(String name, String fallback) {
            List<String> all = values.get(name);
            return all == null ? fallback : all.get(all.size() - 1);
        }

        String get(String name) {
            return get(name, null);
        }

        List<String> all(String name) {
            return values.getOrDefault(name, List.of());
        }

        boolean has(String name) {
            return values.containsKey(name);
        }

        int integer(String name, int fallback) {
            String value = get(name);
            return value == null ? fallback : Integer.parseInt(value);
        }
    }

    /** The provider's ConnectionFactory for --url (--factory: its class), with --user. */
    static Connection connect(Options options) throws Exception {
        String url = options.get("url");
        if (url == null) {
            throw new IllegalArgumentException("--url is required");
        }
        String scheme = url.contains(":") ? url.substring(0, url.indexOf(':')) : url;
        String factoryClass = options.get("factory", FACTORIES.get(scheme));
        if (factoryClass == null) {
            throw new IllegalArgumentException("no ConnectionFactory known for " + url
                    + ": give --factory CLASS");
        }
        Constructor<?> make = Class.forName(factoryClass).getConstructor(String.class);
        ConnectionFactory factory = (ConnectionFactory) make.newInstance(url);
        Connection connection = options.has("user")
                ? factory.createConnection(options.get("user"), options.get("password"))
                : factory.createConnection();
        if (options.has("client-id")) {
            connection.setClientID(options.get("client-id"));
        }
        return connection;
    }

    /** --queue NAME, --topic NAME, or --destination /queue/NAME, /topic/NAME (msgcap's). */
    static Destination destination(Session session, Options options) throws JMSException {
        String destination = options.get("destination");
        if (destination != null) {
            return named(session, destination);
        }
        if (options.has("topic")) {
            return session.createTopic(options.get("topic"));
        }
        if (options.has("queue")) {
            return session.createQueue(options.get("queue"));
        }
        throw new IllegalArgumentException("--queue, --topic or --destination is required");
    }

    /** A destination written /queue/NAME or /topic/NAME. */
    static Destination named(Session session, String destination) throws JMSException {
        if (destination.startsWith("/topic/")) {
            return session.createTopic(destination.substring("/topic/".length()));
        }
        if (destination.startsWith("/queue/")) {
            return session.createQueue(destination.substring("/queue/".length()));
        }
        throw new IllegalArgumentException("a destination is /queue/NAME or /topic/NAME: "
                + destination);
    }

    private static final Pattern PLACE = Pattern.compile("\\{n(?::([^}]+))?\\}");

    /** A template with the message number: {n}, or {n:FORMAT} (String.format's, e.g. 010d). */
    static String fill(String template, long n) {
        Matcher m = PLACE.matcher(template);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            String format = m.group(1);
            String value = format == null ? Long.toString(n) : String.format("%" + format, n);
            m.appendReplacement(out, Matcher.quoteReplacement(value));
        }
        m.appendTail(out);
        return out.toString();
    }

    /** A typed value, TYPE:VALUE with TYPE boolean, byte, short, int, long, float, double or
     * string (VALUE already filled in). */
    static Object typed(String spec) {
        int colon = spec.indexOf(':');
        if (colon < 0) {
            throw new IllegalArgumentException("a typed value is TYPE:VALUE: " + spec);
        }
        String type = spec.substring(0, colon);
        String value = spec.substring(colon + 1);
        switch (type) {
            case "boolean": return Boolean.parseBoolean(value);
            case "byte": return Byte.parseByte(value);
            case "short": return Short.parseShort(value);
            case "int": return Integer.parseInt(value);
            case "long": return Long.parseLong(value);
            case "float": return Float.parseFloat(value);
            case "double": return Double.parseDouble(value);
            case "string": return value;
            default: throw new IllegalArgumentException("unknown type " + type + " in " + spec);
        }
    }

    /** JSON text of a string (null: null). */
    static String json(String s) {
        if (s == null) {
            return "null";
        }
        StringBuilder out = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': out.append("\\\""); break;
                case '\\': out.append("\\\\"); break;
                case '\n': out.append("\\n"); break;
                case '\r': out.append("\\r"); break;
                case '\t': out.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
            }
        }
        return out.append('"').toString();
    }

    /** Runs a program's body; a failure is one line on stderr and exit 1. */
    interface Body {
        void run() throws Exception;
    }

    static void main(String program, Body body) {
        try {
            body.run();
        } catch (Exception e) {
            System.err.println(program + ": " + e);
            for (Throwable cause = e.getCause(); cause != null; cause = cause.getCause()) {
                System.err.println("  caused by " + cause);
            }
            System.exit(1);
        }
    }
}
