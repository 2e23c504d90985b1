package thoth;

import ca.uhn.hl7v2.DefaultHapiContext;
import ca.uhn.hl7v2.HapiContext;
import ca.uhn.hl7v2.model.Message;
import ca.uhn.hl7v2.parser.PipeParser;
import ca.uhn.hl7v2.util.Terser;
import ca.uhn.hl7v2.validation.impl.ValidationContextFactory;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * HAPI v2 2.6: PipeParser parse, and parse + 10 Terser reads; parse with HAPI's default validation; 10 Terser reads
 * through group paths, with and without the parse. Prints engine/message/op/ns lines.
 */
public final class HapiBench {
    private static final String[][] MESSAGES = {
        {"adt_a01_316B", "adt_a01.hl7"}, {"oru_r01_814B", "oru_r01.hl7"},
        {"oru_r01_5KB", "oru_5k.hl7"}, {"oru_r01_56KB", "oru_56k.hl7"}};
    // Terser paths; segment and group repetitions are 0-based in HAPI's Terser.
    private static final String[] ADT = {"/MSH-9-1", "/MSH-9-2", "/MSH-10", "/MSH-12", "/PID-3-1", "/PID-5-1",
        "/PID-5-2", "/PID-7", "/PID-8", "/PV1-2"};
    private static final String[] ORU = {"/MSH-9-2", "/MSH-10", "/.PID-3-1", "/.PID-5-1", "/.OBR-4-1",
        "/.OBSERVATION(0)/OBX-3-1", "/.OBSERVATION(0)/OBX-5", "/.OBSERVATION(1)/OBX-5",
        "/.OBSERVATION(7)/OBX-5", "/.OBSERVATION(7)/OBX-8"};

    // The same 10 values through group paths: every segment named where the v2.5 structure puts it.
    private static final String[] ORU_GROUP = {"/MSH-9-2", "/MSH-10", "/PATIENT_RESULT/PATIENT/PID-3-1",
        "/PATIENT_RESULT/PATIENT/PID-5-1", "/PATIENT_RESULT/ORDER_OBSERVATION/OBR-4-1",
        "/PATIENT_RESULT/ORDER_OBSERVATION/OBSERVATION(0)/OBX-3-1",
        "/PATIENT_RESULT/ORDER_OBSERVATION/OBSERVATION(0)/OBX-5",
        "/PATIENT_RESULT/ORDER_OBSERVATION/OBSERVATION(1)/OBX-5",
        "/PATIENT_RESULT/ORDER_OBSERVATION/OBSERVATION(7)/OBX-5",
        "/PATIENT_RESULT/ORDER_OBSERVATION/OBSERVATION(7)/OBX-8"};
    // What every engine must read (rust/src/main.rs holds the same lists).
    private static final String[] ADT_VALUES = {"ADT", "A01", "MSG00001", "2.5", "MRN12345", "DOE", "JOHN",
        "19800315", "M", "I"};
    private static final String[] ORU_VALUES = {"R01", "MSG00002", "MRN12345", "DOE", "58410-2", "6690-2", "7.5",
        "4.85", "452", "H"};

    static void expect(String name, Message msg, String[] paths, String[] values) throws Exception {
        Terser t = new Terser(msg);
        for (int i = 0; i < paths.length; i++) {
            String v = t.get(paths[i]);
            if (!values[i].equals(v))
                throw new IllegalStateException(name + " " + paths[i] + " = " + v + ", expected " + values[i]);
        }
    }

    interface Op { Object run() throws Exception; }

    // Thread CPU time, not wall time: the machine is shared, and every runner in run.sh measures the same way.
    private static final ThreadMXBean CPU = ManagementFactory.getThreadMXBean();

    static long cpu() { return CPU.getCurrentThreadCpuTime(); }

    static double time(long budgetMs, Op op) throws Exception {
        long n = 0, t0 = cpu();
        while (cpu() - t0 < 1_000_000_000L) { op.run(); n++; } // JIT warm-up: 1 s of CPU
        long perRound = Math.max(1, n * budgetMs / 7 / 1000);
        double[] rounds = new double[7];
        for (int r = 0; r < 7; r++) {
            long t = cpu();
            for (long i = 0; i < perRound; i++) op.run();
            rounds[r] = (double) (cpu() - t) / perRound;
        }
        Arrays.sort(rounds);
        return rounds[3];
    }

    public static void main(String[] args) throws Exception {
        String dir = args[0];
        long budget = args.length > 1 ? Long.parseLong(args[1]) : 1400;
        HapiContext ctx = new DefaultHapiContext();
        ctx.setValidationContext(ValidationContextFactory.noValidation());
        PipeParser parser = ctx.getPipeParser();
        // HAPI's default: a DefaultHapiContext validates with ValidationContextFactory.defaultValidation()
        // (primitive-type rules, applied as the parser sets each value).
        HapiContext validating = new DefaultHapiContext();
        PipeParser validatingParser = validating.getPipeParser();
        for (String[] m : MESSAGES) {
            String text = new String(Files.readAllBytes(Path.of(dir, m[1])), StandardCharsets.UTF_8);
            boolean adt = m[0].startsWith("adt");
            String[] paths = adt ? ADT : ORU;
            // The ADT^A01's segments stand at the message level: its flat Terser paths are its group paths.
            String[] group = adt ? ADT : ORU_GROUP;
            String[] values = adt ? ADT_VALUES : ORU_VALUES;
            Message check = parser.parse(text);
            expect(m[0], check, paths, values);
            expect(m[0], check, group, values);
            // Parses with the default validation (throws on a rule violation), which is on: a letter in
            // PID-7 (a TS) fails it.
            expect(m[0], validatingParser.parse(text), group, values);
            boolean rejected = false;
            try {
                validatingParser.parse(text.replace("|19800315|", "|1980X315|"));
            } catch (ca.uhn.hl7v2.HL7Exception e) {
                rejected = true;
            }
            if (!rejected) throw new IllegalStateException(m[0] + ": HAPI's default validation accepted a bad PID-7");
            System.out.printf("hapi-2.6\t%s\tparse\t%.1f%n", m[0], time(budget, () -> parser.parse(text)));
            System.out.printf("hapi-2.6\t%s\tparse+get10\t%.1f%n", m[0], time(budget, () -> {
                Terser t = new Terser(parser.parse(text));
                int len = 0;
                for (String p : paths) len += t.get(p).length();
                return len;
            }));
            System.out.printf("hapi-2.6\t%s\tparse+validate\t%.1f%n", m[0],
                time(budget, () -> validatingParser.parse(text)));
            System.out.printf("hapi-2.6\t%s\tparse+get10-group\t%.1f%n", m[0], time(budget, () -> {
                Terser t = new Terser(parser.parse(text));
                int len = 0;
                for (String p : group) len += t.get(p).length();
                return len;
            }));
            System.out.printf("hapi-2.6\t%s\tget10-group\t%.1f%n", m[0], time(budget, () -> {
                Terser t = new Terser(check);
                int len = 0;
                for (String p : group) len += t.get(p).length();
                return len;
            }));
        }
    }
}
