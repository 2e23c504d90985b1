// HAPI HL7 v2 2.6.0 differential harness for the Thoth hl7v2 crate.
//
// Usage: java -cp <jar>:<deps> Main FILE|DIR...
//
// For each message of each file prints where HAPI places every non-empty segment in its group
// tree (see README.md for the exact output format). Files are read and output is written as
// ISO-8859-1, so segment bytes round-trip unchanged whatever the file's real charset is.

import ca.uhn.hl7v2.DefaultHapiContext;
import ca.uhn.hl7v2.HapiContext;
import ca.uhn.hl7v2.model.Group;
import ca.uhn.hl7v2.model.Message;
import ca.uhn.hl7v2.model.Segment;
import ca.uhn.hl7v2.model.Structure;
import ca.uhn.hl7v2.parser.PipeParser;
import ca.uhn.hl7v2.validation.impl.ValidationContextFactory;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;

public final class Main {
    private static BufferedWriter out;

    public static void main(String[] args) throws Exception {
        out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.ISO_8859_1), 1 << 16);
        HapiContext ctx = new DefaultHapiContext();
        ctx.setValidationContext(ValidationContextFactory.noValidation());
        PipeParser parser = ctx.getPipeParser();
        for (String arg : args) {
            Path p = Paths.get(arg);
            if (Files.isDirectory(p)) {
                // Directories: every *.hl7 file below, in sorted path order, printed by its path.
                List<Path> files;
                try (Stream<Path> s = Files.walk(p)) {
                    files = s.filter(Files::isRegularFile)
                             .filter(f -> f.getFileName().toString().toLowerCase().endsWith(".hl7"))
                             .sorted()
                             .collect(Collectors.toList());
                }
                for (Path f : files) doFile(parser, f.toString());
            } else {
                doFile(parser, arg);
            }
        }
        out.flush();
    }

    /** Splits a file into messages: segments end at CR, LF or CRLF; blank lines are dropped; a
     *  message begins at each line starting with "MSH"; lines before the first MSH are dropped. */
    static List<String> split(String text) {
        if (text.startsWith("\u00ef\u00bb\u00bf")) text = text.substring(3); // UTF-8 BOM, read as latin-1
        List<String> msgs = new ArrayList<>();
        StringBuilder cur = null;
        for (String line : text.split("\r\n|\r|\n")) {
            if (line.trim().isEmpty()) continue;
            if (line.startsWith("MSH")) {
                if (cur != null) msgs.add(cur.toString());
                cur = new StringBuilder();
            }
            if (cur == null) continue;
            cur.append(line).append('\r');
        }
        if (cur != null) msgs.add(cur.toString());
        return msgs;
    }

    static void doFile(PipeParser parser, String path) throws IOException {
        String text = new String(Files.readAllBytes(Paths.get(path)), StandardCharsets.ISO_8859_1);
        List<String> msgs = split(text);
        for (int i = 0; i < msgs.size(); i++) {
            out.write("#MESSAGE " + path + "\t" + i + "\n");
            Message m;
            try {
                m = parser.parse(msgs.get(i));
            } catch (Throwable t) {
                error(t);
                continue;
            }
            // Walk into a buffer first, so a failure mid-walk prints only the #ERROR line.
            StringBuilder sb = new StringBuilder();
            try {
                String cls = m.getClass().getName();
                cls = cls.substring(cls.lastIndexOf('.') + 1); // GenericMessage$V25 stays informative
                sb.append("#STRUCTURE ").append(cls).append('\t').append(m.getVersion()).append('\n');
                walk(m, "", sb);
            } catch (Throwable t) {
                error(t);
                continue;
            }
            out.write(sb.toString());
        }
    }

    static void walk(Group g, String prefix, StringBuilder sb) throws Exception {
        for (String name : g.getNames()) {
            Structure[] reps = g.getAll(name);
            for (int r = 0; r < reps.length; r++) {
                String path = prefix + "/" + name + "(" + r + ")";
                Structure s = reps[r];
                if (s instanceof Group) {
                    walk((Group) s, path, sb);
                } else if (s instanceof Segment) {
                    Segment seg = (Segment) s;
                    if (!seg.isEmpty()) sb.append(path).append('\t').append(seg.encode()).append('\n');
                }
            }
        }
    }

    static void error(Throwable t) throws IOException {
        String msg = t.getMessage();
        if (msg == null) msg = "";
        int nl = msg.indexOf('\n');
        if (nl >= 0) msg = msg.substring(0, nl);
        int cr = msg.indexOf('\r');
        if (cr >= 0) msg = msg.substring(0, cr);
        out.write("#ERROR " + t.getClass().getName() + ": " + msg + "\n");
    }
}
