// Interop client: sends -count records to a Fluentd forward server with the
// official Go logger (github.com/fluent/fluent-logger-golang/fluent).
//
// Record i = {"message": "<prefix>-i", "seq": i, "client": "go"}.
// Exit status 0 only if every Post succeeded (with -ack: was acknowledged;
// with -async: every queued record was then written), 1 otherwise, 2 on bad
// usage (or an unusable -ca file).
//
// TLS: -tls sets Config.FluentNetwork = "tls"; the library then verifies the
// server certificate against the system roots and the -host name/IP, unless
// -tls-insecure (Config.TlsInsecureSkipVerify). The library has no setting for
// a CA or tls.Config, so -ca points Go's own root loading at the file instead
// (SSL_CERT_FILE, with SSL_CERT_DIR at an empty directory: crypto/x509 on
// Unix other than macOS), making that file the only trust anchor. The library
// has no shared-key (HELO/PING/PONG) support.
package main

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/fluent/fluent-logger-golang/fluent"
)

func main() {
	host := flag.String("host", "127.0.0.1", "server host")
	port := flag.Int("port", 24224, "server port")
	tag := flag.String("tag", "test.go", "tag of every record")
	count := flag.Int("count", 1, "number of records")
	prefix := flag.String("prefix", "go", "message prefix")
	ack := flag.Bool("ack", false, "request an ack for every message (RequestAck)")
	// Async defaults to false: Post then writes synchronously and returns
	// the write (and, with -ack, the ack) error instead of dropping it.
	async := flag.Bool("async", false, "use the library's async mode")
	useTLS := flag.Bool("tls", false, "connect with TLS (FluentNetwork \"tls\")")
	insecure := flag.Bool("tls-insecure", false, "with -tls: skip server certificate verification (TlsInsecureSkipVerify)")
	caFile := flag.String("ca", "", "with -tls: trust only the CA certificate(s) in this PEM file")
	flag.Parse()

	if (*insecure || *caFile != "") && !*useTLS {
		fmt.Fprintln(os.Stderr, "go-sender: -tls-insecure and -ca need -tls")
		os.Exit(2)
	}
	if *caFile != "" {
		if err := trustOnly(*caFile); err != nil {
			fmt.Fprintf(os.Stderr, "go-sender: -ca %s: %v\n", *caFile, err)
			os.Exit(2)
		}
	}
	network := "tcp"
	if *useTLS {
		network = "tls"
	}

	// In async mode Post only queues; the library writes from a goroutine,
	// drops a record once its retries are used up, and reports that only to
	// AsyncResultCallback (Close still returns nil). So count deliveries here
	// and stop at the first loss rather than retrying every queued record.
	var delivered atomic.Int64
	var asyncResult func([]byte, error)
	if *async {
		asyncResult = func(_ []byte, err error) {
			if err != nil {
				fmt.Fprintf(os.Stderr, "go-sender: async send failed, record lost: %v\n", err)
				os.Exit(1)
			}
			delivered.Add(1)
		}
	}

	logger, err := fluent.New(fluent.Config{
		FluentHost:            *host,
		FluentPort:            *port,
		FluentNetwork:         network,
		TlsInsecureSkipVerify: *insecure,
		RequestAck:            *ack,
		Async:                 *async,
		AsyncResultCallback:   asyncResult,
		// Fail fast instead of the library default of 13 retries with backoff,
		// and never block forever: the library's default read (ack) and
		// write timeouts are "none".
		MaxRetry:     3,
		ReadTimeout:  5 * time.Second,
		WriteTimeout: 10 * time.Second,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "go-sender: connect: %v\n", err)
		os.Exit(1)
	}

	for i := 0; i < *count; i++ {
		record := map[string]interface{}{
			"message": fmt.Sprintf("%s-%d", *prefix, i),
			"seq":     i,
			"client":  "go",
		}
		if err := logger.Post(*tag, record); err != nil {
			fmt.Fprintf(os.Stderr, "go-sender: post seq %d: %v\n", i, err)
			logger.Close()
			os.Exit(1)
		}
	}
	// In async mode Close first drains the queue (ForceStopAsyncSend is off).
	if err := logger.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "go-sender: close: %v\n", err)
		os.Exit(1)
	}
	if *async && delivered.Load() != int64(*count) {
		fmt.Fprintf(os.Stderr, "go-sender: only %d of %d records were written\n", delivered.Load(), *count)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "go-sender: sent %d records to %s:%d tag=%s ack=%v async=%v tls=%v\n",
		*count, *host, *port, *tag, *ack, *async, *useTLS)
}

// trustOnly makes the CA certificate(s) in the PEM file caFile the only roots
// that crypto/tls verifies against when no tls.Config.RootCAs is set, which
// is how fluent-logger-golang dials. Go loads those "system" roots once, on
// first use, from $SSL_CERT_FILE plus every file in $SSL_CERT_DIR, so point
// the one at caFile and the other at an empty directory, force the load, and
// check that it took (it would not on macOS or Windows).
func trustOnly(caFile string) error {
	data, err := os.ReadFile(caFile)
	if err != nil {
		return err
	}
	var cas []*x509.Certificate
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return err
		}
		cas = append(cas, cert)
	}
	if len(cas) == 0 {
		return errors.New("no PEM CERTIFICATE in file")
	}

	emptyDir, err := os.MkdirTemp("", "go-sender-certs-")
	if err != nil {
		return err
	}
	defer os.Remove(emptyDir)
	os.Setenv("SSL_CERT_FILE", caFile)
	os.Setenv("SSL_CERT_DIR", emptyDir)
	if _, err := x509.SystemCertPool(); err != nil { // loads and caches the roots
		return err
	}

	// A CA in the root pool verifies as a chain of itself.
	opts := x509.VerifyOptions{KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}
	for _, ca := range cas {
		if _, err := ca.Verify(opts); err != nil {
			return fmt.Errorf("could not make %q a trusted root: %v", ca.Subject, err)
		}
	}
	return nil
}
