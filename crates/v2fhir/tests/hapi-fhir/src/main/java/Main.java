import ca.uhn.fhir.context.FhirContext;
import ca.uhn.fhir.parser.DataFormatException;
import ca.uhn.fhir.parser.IParser;
import ca.uhn.fhir.parser.IParserErrorHandler;
import ca.uhn.fhir.parser.StrictErrorHandler;
import org.hl7.fhir.r4.model.Bundle;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Reads FHIR R4 Bundles as NDJSON on stdin (one per line) and parses each with HAPI FHIR's JSON parser under
 * StrictErrorHandler, which throws on the first unknown element, wrong JSON type, invalid primitive or code value,
 * and so on, where the default (lenient) handler only logs. Prints one verdict line per input line, in order:
 * {@code ok}, or {@code error\t<strict parser's message>[\t<further error>...]}, each message on one line. Blank
 * lines get a verdict too, so that line N of the output always answers line N of the input.
 *
 * <p>The strict parser stops at its first error. So that one run shows everything to fix, a rejected Bundle is
 * parsed a second time with a handler that asks StrictErrorHandler about every event, records what it throws and
 * goes on: the further errors carry StrictErrorHandler's own messages. The verdict itself is the strict parse's.
 */
public final class Main {
    static String oneLine(Throwable e) {
        String msg = e.getMessage() == null ? e.getClass().getName() : e.getMessage();
        if (!(e instanceof DataFormatException)) msg = e.getClass().getName() + ": " + msg;
        return msg.replaceAll("\\s+", " ").trim();
    }

    /** A handler that forwards every event to StrictErrorHandler and records, instead of throwing, its errors. */
    static IParserErrorHandler collecting(List<String> errors) {
        StrictErrorHandler strict = new StrictErrorHandler();
        return (IParserErrorHandler) Proxy.newProxyInstance(Main.class.getClassLoader(),
            new Class<?>[] {IParserErrorHandler.class}, (proxy, method, args) -> {
                try {
                    return method.invoke(strict, args);
                } catch (InvocationTargetException e) {
                    if (!(e.getCause() instanceof DataFormatException)) throw e.getCause();
                    errors.add(oneLine(e.getCause()));
                    return null; // every event method is void; only isErrorOnInvalidValue returns, and never throws
                }
            });
    }

    public static void main(String[] args) throws Exception {
        FhirContext ctx = FhirContext.forR4();
        IParser parser = ctx.newJsonParser().setParserErrorHandler(new StrictErrorHandler());
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintWriter out = new PrintWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            try {
                // Bundle.class, not parseResource(String): a Bundle is what the converter promises, so any other
                // resourceType fails here too.
                Bundle bundle = parser.parseResource(Bundle.class, line);
                if (bundle.getEntry().isEmpty()) throw new IllegalStateException("the Bundle has no entry");
                out.println("ok");
            } catch (Exception e) {
                Set<String> errors = new LinkedHashSet<>();
                errors.add(oneLine(e));
                List<String> more = new ArrayList<>();
                try {
                    ctx.newJsonParser().setParserErrorHandler(collecting(more)).parseResource(Bundle.class, line);
                } catch (Exception again) {
                    more.add(oneLine(again));
                }
                errors.addAll(more);
                out.println("error\t" + String.join("\t", errors));
            }
        }
        out.flush();
    }
}
