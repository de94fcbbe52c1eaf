// Interop client: sends -count records to a Fluentd forward server with the
// official Go logger (github.com/fluent/fluent-logger-golang/fluent).
//
// Record i = {"message": "<prefix>-i", "seq": i, "client": "go"}.
// Exit status 0 only if every Post succeeded (with -ack: was acknowledged).
package main

import (
	"flag"
	"fmt"
	"os"
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
	flag.Parse()

	logger, err := fluent.New(fluent.Config{
		FluentHost: *host,
		FluentPort: *port,
		RequestAck: *ack,
		Async:      *async,
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
	// In async mode Close drains the queue; its error means records were lost.
	if err := logger.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "go-sender: close: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "go-sender: sent %d records to %s:%d tag=%s ack=%v async=%v\n",
		*count, *host, *port, *tag, *ack, *async)
}
