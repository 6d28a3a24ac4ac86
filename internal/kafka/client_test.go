package kafka_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

// When the caller's own deadline ends a call, the error says so instead of
// blaming the cluster: Terraform's timeouts are not an unreachable cluster.
func TestCallerDeadlineIsNotUnreachable(t *testing.T) {
	// A server that accepts and never answers: only a deadline ends a call.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	addr := ln.Addr().String()

	cl, err := kafka.NewClient(kafka.Config{BootstrapServers: []string{addr}, RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = cl.ClusterID(ctx)
	var stopped *kafka.StoppedError
	if !errors.As(err, &stopped) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "deadline passed") {
		t.Fatalf("err = %v (%T), want a StoppedError naming the deadline", err, err)
	}

	// With the caller's context alive, the request timeout is the cluster's
	// fault: unreachable.
	cl2, err := kafka.NewClient(kafka.Config{BootstrapServers: []string{addr}, RequestTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	_, err = cl2.ClusterID(context.Background())
	var unreachable *kafka.UnreachableError
	if !errors.As(err, &unreachable) {
		t.Fatalf("err = %v (%T), want an UnreachableError", err, err)
	}
}
