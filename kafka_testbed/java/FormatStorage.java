import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * kafka-storage format for several KRaft nodes in one JVM.
 *
 * <p>Starting a JVM and loading Kafka's classes costs more than formatting a node, and a test cluster formats four
 * nodes at once on a two-core machine. Kafka's own StorageTool does the work; it is called by reflection so that this
 * class compiles without Kafka on the classpath and runs on any Kafka 4.x release.
 *
 * <p>Usage: {@code FormatStorage <format arguments...> -- <server.properties>...}. After each node's own output a line
 * {@code @@formatted <exit code> <server.properties>} says how that node's format ended.
 */
public final class FormatStorage {
    private static final String MARKER = "@@formatted ";

    private FormatStorage() {
    }

    public static void main(String[] args) throws ReflectiveOperationException {
        int separator = Arrays.asList(args).indexOf("--");
        if (separator < 0 || separator == args.length - 1) {
            System.err.println("usage: FormatStorage <format arguments...> -- <server.properties>...");
            System.exit(2);
        }
        List<String> common = Arrays.asList(args).subList(0, separator);
        Method execute = Class.forName("kafka.tools.StorageTool").getMethod("execute", String[].class, PrintStream.class);
        int failures = 0;
        for (String config : Arrays.asList(args).subList(separator + 1, args.length)) {
            List<String> nodeArgs = new ArrayList<>(common);
            nodeArgs.add("-c");
            nodeArgs.add(config);
            int code;
            try {
                code = (Integer) execute.invoke(null, nodeArgs.toArray(new String[0]), System.out);
            } catch (InvocationTargetException wrapped) {
                Throwable cause = wrapped.getCause();
                // StorageTool's main prints only the message of the failures it raises for the user.
                String name = cause.getClass().getSimpleName();
                boolean terse = "FormatterException".equals(name) || "TerseFailure".equals(name);
                System.out.println(terse ? cause.getMessage() : cause.toString());
                code = 1;
            }
            System.out.println(MARKER + code + " " + config);
            System.out.flush();
            if (code != 0) {
                failures++;
            }
        }
        System.exit(failures == 0 ? 0 : 1);
    }
}
