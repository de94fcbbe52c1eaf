package logferry.interop;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.komamitsu.fluency.Fluency;
import org.komamitsu.fluency.fluentd.FluencyBuilderForFluentd;

/**
 * Interop client: sends COUNT records to a Fluentd forward server with Fluency,
 * in ack response mode (every chunk carries a "chunk" option and waits for
 * {"ack": chunk}).
 *
 * Usage: java -jar fluency-sender.jar HOST PORT TAG COUNT [PREFIX]
 * Record i = {"message": PREFIX-i, "seq": i, "client": "fluency"}.
 * Exit status 0 only if every buffered record was flushed and no error was
 * reported; 1 otherwise; 2 on bad usage.
 */
public final class FluencySender {
    public static void main(String[] args) {
        if (args.length < 4 || args.length > 5) {
            System.err.println("usage: java -jar fluency-sender.jar HOST PORT TAG COUNT [PREFIX]");
            System.exit(2);
        }
        // Must be set before the first slf4j logger is created: keep Fluency's
        // own warnings/errors on stderr but drop its info chatter.
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");

        String host = args[0];
        int port = Integer.parseInt(args[1]);
        String tag = args[2];
        int count = Integer.parseInt(args[3]);
        String prefix = args.length == 5 ? args[4] : "java";

        // Fluency retries failed sends internally and only reports through
        // this handler, so record every error it sees.
        AtomicInteger errorCount = new AtomicInteger();
        AtomicReference<Throwable> firstError = new AtomicReference<>();

        FluencyBuilderForFluentd builder = new FluencyBuilderForFluentd();
        builder.setAckResponseMode(true);
        // Fail within seconds instead of retrying for minutes if the server
        // is down or never acks.
        builder.setSenderMaxRetryCount(3);
        builder.setConnectionTimeoutMilli(5_000);
        builder.setReadTimeoutMilli(5_000);
        builder.setErrorHandler(e -> {
            errorCount.incrementAndGet();
            firstError.compareAndSet(null, e);
            System.err.println("fluency-sender: error: " + e);
        });

        boolean ok = false;
        Fluency fluency = builder.build(host, port);
        try {
            for (int i = 0; i < count; i++) {
                Map<String, Object> record = new HashMap<>();
                record.put("message", prefix + "-" + i);
                record.put("seq", i);
                record.put("client", "fluency");
                fluency.emit(tag, record);
            }
            fluency.flush();
            boolean flushed = fluency.waitUntilAllBufferFlushed(60);
            ok = flushed && errorCount.get() == 0;
            if (!flushed) {
                System.err.println("fluency-sender: buffer not flushed within 60s");
            }
        } catch (Exception e) {
            firstError.compareAndSet(null, e);
            System.err.println("fluency-sender: exception: " + e);
        } finally {
            try {
                fluency.close();
            } catch (Exception e) {
                ok = false;
                System.err.println("fluency-sender: close failed: " + e);
            }
        }
        // An error reported after the wait (e.g. during close) still fails the run.
        ok = ok && errorCount.get() == 0 && firstError.get() == null;

        System.err.printf("fluency-sender: %s count=%d tag=%s target=%s:%d errors=%d%s%n",
                ok ? "OK" : "FAILED", count, tag, host, port, errorCount.get(),
                firstError.get() == null ? "" : " first_error=" + firstError.get());
        System.exit(ok ? 0 : 1);
    }
}
