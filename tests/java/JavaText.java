// What Java's String.valueOf gives for doubles and floats: the oracle of msgcap's renderings of
// AMQP typed properties (tests/runtime/test_jmstext.py). Reads "d <bits>" / "f <bits>" lines
// (the value's IEEE bits in hex), prints one rendering per line.
import java.io.BufferedReader;
import java.io.InputStreamReader;

public final class JavaText {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        StringBuilder out = new StringBuilder();
        for (String line; (line = in.readLine()) != null; ) {
            String bits = line.substring(2);
            if (line.charAt(0) == 'd') {
                out.append(String.valueOf(Double.longBitsToDouble(Long.parseUnsignedLong(bits, 16))));
            } else {
                out.append(String.valueOf(Float.intBitsToFloat(Integer.parseUnsignedInt(bits, 16))));
            }
            out.append('\n');
        }
        System.out.print(out);
    }
}
