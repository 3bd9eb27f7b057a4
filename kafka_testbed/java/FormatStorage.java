import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * kafka-storage format for several KRaft nodes in one JVM.
 *
 * <p>Starting a JVM and loading Kafka's classes costs more than formatting a node, and a test cluster formats four
 * nodes at once on a two-core machine. Kafka's own StorageTool does the work; it is called by reflection so that this
 * class compiles without Kafka on the classpath and runs on any release from 3.3: through {@code execute} where the
 * release has it, else through {@code main} with Kafka's exit procedure (org.apache.kafka.common.utils.Exit) turned
 * into an exception that carries the exit code.
 *
 * <p>Usage: {@code FormatStorage <format arguments...> -- <server.properties>...}. After each node's own output a line
 * {@code @@formatted <exit code> <server.properties>} says how that node's format ended.
 */
public final class FormatStorage {
    private static final String MARKER = "@@formatted ";

    private FormatStorage() {
    }

    /** Thrown instead of exiting when an older StorageTool's main calls Exit.exit. */
    private static final class ExitCalled extends RuntimeException {
        private static final long serialVersionUID = 1L;
        private final int code;

        ExitCalled(int code) {
            super(null, null, false, false);
            this.code = code;
        }
    }

    private static Method exitInterceptingMain(Class<?> tool) throws ReflectiveOperationException {
        Class<?> exit = Class.forName("org.apache.kafka.common.utils.Exit");
        Class<?> procedure = Class.forName("org.apache.kafka.common.utils.Exit$Procedure");
        Object throwing = Proxy.newProxyInstance(procedure.getClassLoader(), new Class<?>[] {procedure},
            (proxy, method, methodArgs) -> {
                if ("execute".equals(method.getName())) {
                    throw new ExitCalled((Integer) methodArgs[0]);
                }
                return method.getDeclaringClass() == Object.class ? method.invoke(proxy, methodArgs) : null;
            });
        exit.getMethod("setExitProcedure", procedure).invoke(null, throwing);
        return tool.getMethod("main", String[].class);
    }

    public static void main(String[] args) throws ReflectiveOperationException {
        int separator = Arrays.asList(args).indexOf("--");
        if (separator < 0 || separator == args.length - 1) {
            System.err.println("usage: FormatStorage <format arguments...> -- <server.properties>...");
            System.exit(2);
        }
        List<String> common = Arrays.asList(args).subList(0, separator);
        Class<?> tool = Class.forName("kafka.tools.StorageTool");
        Method execute = null;
        Method main = null;
        try {
            execute = tool.getMethod("execute", String[].class, PrintStream.class);
        } catch (NoSuchMethodException olderRelease) {
            main = exitInterceptingMain(tool);
        }
        int failures = 0;
        for (String config : Arrays.asList(args).subList(separator + 1, args.length)) {
            List<String> nodeArgs = new ArrayList<>(common);
            nodeArgs.add("-c");
            nodeArgs.add(config);
            int code = formatOne(execute, main, nodeArgs.toArray(new String[0]));
            System.out.println(MARKER + code + " " + config);
            System.out.flush();
            if (code != 0) {
                failures++;
            }
        }
        System.exit(failures == 0 ? 0 : 1);
    }

    /** One node's format through {@code execute} (or {@code main}); its exit code. */
    private static int formatOne(Method execute, Method main, String[] nodeArgs) throws IllegalAccessException {
        try {
            if (execute != null) {
                return (Integer) execute.invoke(null, nodeArgs, System.out);
            }
            main.invoke(null, (Object) nodeArgs);
            return 0;
        } catch (InvocationTargetException wrapped) {
            Throwable cause = wrapped.getCause();
            if (cause instanceof ExitCalled) {
                return ((ExitCalled) cause).code;
            }
            // StorageTool's main prints only the message of the failures it raises for the user.
            String name = cause.getClass().getSimpleName();
            boolean terse = "FormatterException".equals(name) || "TerseFailure".equals(name);
            System.out.println(terse ? cause.getMessage() : cause.toString());
            return 1;
        }
    }
}
