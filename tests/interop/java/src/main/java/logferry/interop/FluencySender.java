package logferry.interop;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.SSLSocketFactory;
import javax.net.ssl.TrustManagerFactory;

import org.komamitsu.fluency.Fluency;
import org.komamitsu.fluency.fluentd.FluencyBuilderForFluentd;

/**
 * Interop client: sends COUNT records to a Fluentd forward server with Fluency,
 * in ack response mode (every chunk carries a "chunk" option and waits for
 * {"ack": chunk}).
 *
 * Usage: java -jar fluency-sender.jar HOST PORT TAG COUNT [PREFIX] [--tls [--ca FILE]]
 * Record i = {"message": PREFIX-i, "seq": i, "client": "fluency"}.
 * Exit status 0 only if every buffered record was flushed and no error was
 * reported; 1 otherwise; 2 on bad usage (or an unreadable --ca file).
 *
 * Options (after the positional arguments):
 *   --tls      connect with TLS (FluencyBuilderForFluentd.setSslEnabled). The
 *              server certificate must chain to a trusted CA (the JDK's
 *              default trust store unless --ca is given) and must match HOST:
 *              Fluency itself does no hostname check (it connects an
 *              unconnected SSLSocket), so this client turns on HTTPS-style
 *              endpoint identification on every socket.
 *   --ca FILE  trust only the CA certificate(s) in PEM FILE (needs --tls).
 * There is no shared-key option: Fluency 2.7.3 does not implement the
 * forward protocol's HELO/PING/PONG handshake.
 */
public final class FluencySender {
    public static void main(String[] args) {
        if (args.length < 4) {
            usage("missing positional arguments");
        }
        // Must be set before the first slf4j logger is created: keep Fluency's
        // own warnings/errors on stderr but drop its info chatter.
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");

        String host = args[0];
        int port = Integer.parseInt(args[1]);
        String tag = args[2];
        int count = Integer.parseInt(args[3]);
        int next = 4;
        // PREFIX is the one optional positional argument; anything starting
        // with "--" after COUNT is an option.
        String prefix = "java";
        if (args.length > next && !args[next].startsWith("--")) {
            prefix = args[next++];
        }
        boolean tls = false;
        String caFile = null;
        while (next < args.length) {
            String opt = args[next++];
            switch (opt) {
                case "--tls":
                    tls = true;
                    break;
                case "--ca":
                    if (next >= args.length) {
                        usage("--ca needs a FILE");
                    }
                    caFile = args[next++];
                    break;
                default:
                    usage("unknown argument: " + opt);
            }
        }
        if (caFile != null && !tls) {
            usage("--ca needs --tls");
        }

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
        if (tls) {
            builder.setSslEnabled(true);
            SSLSocketFactory base;
            if (caFile == null) {
                base = (SSLSocketFactory) SSLSocketFactory.getDefault();
            } else {
                try {
                    base = socketFactoryTrusting(Path.of(caFile));
                } catch (IOException | GeneralSecurityException e) {
                    System.err.println("fluency-sender: cannot use --ca " + caFile + ": " + e);
                    System.exit(2);
                    return;
                }
            }
            builder.setSslSocketFactory(new HostnameVerifyingFactory(base));
        }
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

        System.err.printf("fluency-sender: %s count=%d tag=%s target=%s:%d tls=%b errors=%d%s%n",
                ok ? "OK" : "FAILED", count, tag, host, port, tls, errorCount.get(),
                firstError.get() == null ? "" : " first_error=" + firstError.get());
        System.exit(ok ? 0 : 1);
    }

    private static void usage(String problem) {
        System.err.println("fluency-sender: " + problem);
        System.err.println("usage: java -jar fluency-sender.jar HOST PORT TAG COUNT [PREFIX] [--tls [--ca FILE]]");
        System.exit(2);
    }

    /** An SSLSocketFactory whose only trust anchors are the PEM certificate(s) in caPem. */
    private static SSLSocketFactory socketFactoryTrusting(Path caPem)
            throws IOException, GeneralSecurityException {
        Collection<? extends Certificate> certs;
        try (InputStream in = Files.newInputStream(caPem)) {
            // Reads every "-----BEGIN CERTIFICATE-----" block in the file.
            certs = CertificateFactory.getInstance("X.509").generateCertificates(in);
        }
        if (certs.isEmpty()) {
            throw new GeneralSecurityException("no certificate in " + caPem);
        }
        KeyStore trust = KeyStore.getInstance(KeyStore.getDefaultType());
        trust.load(null, null);
        int i = 0;
        for (Certificate cert : certs) {
            trust.setCertificateEntry("ca-" + i++, cert);
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(trust);
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(null, tmf.getTrustManagers(), null);
        return ctx.getSocketFactory();
    }

    /**
     * Turns on hostname verification (endpoint identification "HTTPS") for
     * every socket it creates. Fluency's SSLSocketBuilder calls createSocket()
     * and then connect(InetSocketAddress), so the JDK checks the certificate
     * against the host as given (an IP literal is matched against IP SANs).
     */
    private static final class HostnameVerifyingFactory extends SSLSocketFactory {
        private final SSLSocketFactory delegate;

        HostnameVerifyingFactory(SSLSocketFactory delegate) {
            this.delegate = delegate;
        }

        private static Socket verifying(Socket socket) {
            SSLSocket ssl = (SSLSocket) socket;
            SSLParameters params = ssl.getSSLParameters();
            params.setEndpointIdentificationAlgorithm("HTTPS");
            ssl.setSSLParameters(params);
            return ssl;
        }

        @Override
        public String[] getDefaultCipherSuites() {
            return delegate.getDefaultCipherSuites();
        }

        @Override
        public String[] getSupportedCipherSuites() {
            return delegate.getSupportedCipherSuites();
        }

        @Override
        public Socket createSocket() throws IOException {
            return verifying(delegate.createSocket());
        }

        @Override
        public Socket createSocket(Socket s, String host, int port, boolean autoClose) throws IOException {
            return verifying(delegate.createSocket(s, host, port, autoClose));
        }

        @Override
        public Socket createSocket(String host, int port) throws IOException {
            return verifying(delegate.createSocket(host, port));
        }

        @Override
        public Socket createSocket(String host, int port, InetAddress localHost, int localPort) throws IOException {
            return verifying(delegate.createSocket(host, port, localHost, localPort));
        }

        @Override
        public Socket createSocket(InetAddress host, int port) throws IOException {
            return verifying(delegate.createSocket(host, port));
        }

        @Override
        public Socket createSocket(InetAddress address, int port, InetAddress localAddress, int localPort)
                throws IOException {
            return verifying(delegate.createSocket(address, port, localAddress, localPort));
        }
    }
}
