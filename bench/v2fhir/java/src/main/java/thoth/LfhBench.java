package thoth;

import io.github.linuxforhealth.hl7.HL7ToFHIRConverter;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * LinuxForHealth hl7v2-fhir-converter: HL7ToFHIRConverter.convert (parse + convert to a FHIR R4 Bundle as JSON),
 * then the JSON's UTF-8 bytes, the same work as Thoth's bench (crates/v2fhir/benches/v2fhir.rs). Default options:
 * no validation, no pretty printing. Prints engine/message/op/ns lines.
 */
public final class LfhBench {
    private static final String[][] MESSAGES = {{"adt_a01_316B", "adt_a01.hl7"}, {"oru_r01_814B", "oru_r01.hl7"}};

    interface Op { Object run() throws Exception; }

    // Wall time, like criterion on the Thoth side, so that both sides count the same thing (on a busy machine both
    // include the time other processes take from them; the median over rounds damps it).
    static double time(long warmMs, long budgetMs, Op op) throws Exception {
        long n = 0, t0 = System.nanoTime();
        // JIT warm-up: the converter evaluates YAML templates through JEXL, which takes seconds to compile hot.
        while (System.nanoTime() - t0 < warmMs * 1_000_000L) { op.run(); n++; }
        long perRound = Math.max(1, n * budgetMs / warmMs / 7);
        double[] rounds = new double[7];
        for (int r = 0; r < 7; r++) {
            long t = System.nanoTime();
            for (long i = 0; i < perRound; i++) op.run();
            rounds[r] = (double) (System.nanoTime() - t) / perRound;
        }
        Arrays.sort(rounds);
        return rounds[3];
    }

    public static void main(String[] args) throws Exception {
        String dir = args[0];
        long warm = args.length > 1 ? Long.parseLong(args[1]) : 5000;
        long budget = args.length > 2 ? Long.parseLong(args[2]) : 5000;
        HL7ToFHIRConverter converter = new HL7ToFHIRConverter();
        for (String[] m : MESSAGES) {
            String text = new String(Files.readAllBytes(Path.of(dir, m[1])), StandardCharsets.UTF_8);
            // Before timing: the message converts to a Bundle that holds the patient, so that an error path (which
            // LinuxForHealth may take silently) is not what gets timed.
            String json = converter.convert(text);
            if (json == null || !json.contains("\"Bundle\"") || !json.contains("\"Patient\"")
                || !json.contains("MRN12345"))
                throw new IllegalStateException(m[0] + ": no Bundle with the patient: " + json);
            double ns = time(warm, budget, () -> converter.convert(text).getBytes(StandardCharsets.UTF_8));
            System.out.printf("linuxforhealth\t%s\tparse+convert\t%.1f%n", m[0], ns);
        }
    }
}
