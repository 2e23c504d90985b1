import ca.uhn.fhir.context.FhirContext;
import ca.uhn.fhir.parser.DataFormatException;
import ca.uhn.fhir.parser.IParser;
import ca.uhn.fhir.parser.IParserErrorHandler;
import ca.uhn.fhir.parser.StrictErrorHandler;
import ca.uhn.fhir.context.support.DefaultProfileValidationSupport;
import ca.uhn.fhir.validation.FhirValidator;
import ca.uhn.fhir.validation.ResultSeverityEnum;
import ca.uhn.fhir.validation.SingleValidationMessage;
import org.hl7.fhir.common.hapi.validation.support.CommonCodeSystemsTerminologyService;
import org.hl7.fhir.common.hapi.validation.support.InMemoryTerminologyServerValidationSupport;
import org.hl7.fhir.common.hapi.validation.support.ValidationSupportChain;
import org.hl7.fhir.common.hapi.validation.validator.FhirInstanceValidator;
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

    /**
     * {@code validate}: each Bundle through HAPI's R4 instance validator (the core StructureDefinitions' cardinalities,
     * invariants and required bindings of the codes it knows; no terminology server, so codes of external systems
     * are not looked up). Prints {@code ok}, or {@code error} and each error-level message as
     * {@code <location> :: <message>}, tab-separated, one line per Bundle.
     */
    static void validate(FhirContext ctx, BufferedReader in, PrintWriter out) throws Exception {
        ValidationSupportChain support = new ValidationSupportChain(
            new DefaultProfileValidationSupport(ctx),
            new InMemoryTerminologyServerValidationSupport(ctx),
            new CommonCodeSystemsTerminologyService(ctx));
        FhirInstanceValidator instance = new FhirInstanceValidator(support);
        instance.setNoTerminologyChecks(true);
        FhirValidator validator = ctx.newValidator().registerValidatorModule(instance);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                out.println("ok");
                continue;
            }
            StringBuilder errors = new StringBuilder();
            for (SingleValidationMessage m : validator.validateWithResult(line).getMessages()) {
                if (m.getSeverity().ordinal() < ResultSeverityEnum.ERROR.ordinal()) continue;
                errors.append('\t').append(m.getLocationString()).append(" :: ")
                    .append(m.getMessage().replaceAll("\\s+", " ").trim());
            }
            out.println(errors.length() == 0 ? "ok" : "error" + errors);
        }
        out.flush();
    }

    public static void main(String[] args) throws Exception {
        FhirContext ctx = FhirContext.forR4();
        if (args.length > 0 && args[0].equals("validate")) {
            validate(ctx, new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)),
                new PrintWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8)));
            return;
        }
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
