package bench;

import ca.uhn.hl7v2.DefaultHapiContext;
import ca.uhn.hl7v2.HapiContext;
import ca.uhn.hl7v2.app.HL7Service;
import ca.uhn.hl7v2.model.Message;
import ca.uhn.hl7v2.protocol.ReceivingApplication;
import ca.uhn.hl7v2.validation.impl.ValidationContextFactory;
import java.util.Map;

/** HAPI's MLLP server with an application that parses each message and answers generateACK(). */
public final class HapiServer {
    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        HapiContext ctx = new DefaultHapiContext();
        // The Thoth side does not validate content either; parsing is what both do.
        ctx.setValidationContext(ValidationContextFactory.noValidation());
        HL7Service server = ctx.newServer(port, false);
        server.registerApplication("*", "*", new ReceivingApplication<Message>() {
            @Override
            public Message processMessage(Message in, Map<String, Object> meta) {
                try {
                    return in.generateACK();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            }

            @Override
            public boolean canProcess(Message in) {
                return true;
            }
        });
        server.startAndWait();
        System.out.println("HAPI MLLP server on " + port);
        Thread.currentThread().join();
    }
}
