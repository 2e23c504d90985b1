// Times HAPI FHIR 8.8.1 (FhirContext.forR4()) parse and serialize of JSON and XML for every *.json input in a
// directory; prints TSV lines "hapi <format> <op> <input> <median ms>" like Thoth's compare example.
import ca.uhn.fhir.context.FhirContext;
import ca.uhn.fhir.parser.IParser;
import org.hl7.fhir.instance.model.api.IBaseResource;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;
import java.util.function.Supplier;

public class HapiBench {
    static double median(Supplier<Object> f) {
        // Warm the JIT first: HAPI's steady state, not its first call, is what a server sees.
        long warm = System.nanoTime();
        while (System.nanoTime() - warm < 1_500_000_000L) f.get();
        List<Double> times = new ArrayList<>();
        long start = System.nanoTime();
        while (times.size() < 5 || (System.nanoTime() - start < 1_500_000_000L && times.size() < 2000)) {
            long t = System.nanoTime();
            f.get();
            times.add((System.nanoTime() - t) / 1e6);
        }
        Collections.sort(times);
        return times.get(times.size() / 2);
    }

    public static void main(String[] args) throws Exception {
        FhirContext ctx = FhirContext.forR4();
        List<Path> files = new ArrayList<>();
        try (var s = Files.list(Paths.get(args[0]))) { s.filter(p -> p.toString().endsWith(".json")).sorted().forEach(files::add); }
        for (Path p : files) {
            String name = p.getFileName().toString().replace(".json", "");
            String json = Files.readString(p, StandardCharsets.UTF_8);
            IParser jp = ctx.newJsonParser();
            IParser xp = ctx.newXmlParser();
            IBaseResource r = jp.parseResource(json);
            String compact = jp.encodeResourceToString(r);
            String xml = xp.encodeResourceToString(r);
            System.out.printf(Locale.ROOT, "hapi\tjson\tparse\t%s\t%.4f%n", name, median(() -> jp.parseResource(compact)));
            System.out.printf(Locale.ROOT, "hapi\tjson\tserialize\t%s\t%.4f%n", name, median(() -> jp.encodeResourceToString(r)));
            System.out.printf(Locale.ROOT, "hapi\txml\tparse\t%s\t%.4f%n", name, median(() -> xp.parseResource(xml)));
            System.out.printf(Locale.ROOT, "hapi\txml\tserialize\t%s\t%.4f%n", name, median(() -> xp.encodeResourceToString(r)));
        }
    }
}
