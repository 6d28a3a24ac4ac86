package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// clusterFlags are shared by up and the serve it starts.
type clusterFlags struct {
	dir       string
	brokers   int
	racks     string
	apiAddr   string
	clusterID string
}

func (f *clusterFlags) register(fs interface {
	StringVar(*string, string, string, string)
	IntVar(*int, string, int, string)
}) {
	fs.StringVar(&f.dir, "dir", defaultDir, "directory for the cluster's files, state and log")
	fs.IntVar(&f.brokers, "brokers", 3, "number of brokers to start with")
	fs.StringVar(&f.racks, "racks", "a,b,c", "comma-separated racks, cycled over the brokers")
	fs.StringVar(&f.apiAddr, "api-addr", defaultAPIAddr, "listen address of the HTTP scaling API (127.0.0.1 only)")
	fs.StringVar(&f.clusterID, "cluster-id", "local", "cluster id in the scaling API's paths")
}

func (f *clusterFlags) validate() error {
	if f.brokers < 1 {
		return usageError{fmt.Errorf("--brokers must be at least 1, got %d", f.brokers)}
	}
	if f.clusterID == "" {
		return usageError{errors.New("--cluster-id must not be empty")}
	}
	host, _, err := net.SplitHostPort(f.apiAddr)
	if err != nil {
		return usageError{fmt.Errorf("--api-addr %q: %w", f.apiAddr, err)}
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return usageError{fmt.Errorf("--api-addr %q: the scaling API listens on a loopback address only", f.apiAddr)}
	}
	_, err = parseRacks(f.racks)
	return err
}

// cmdServe is the supervisor: it owns the cluster's JVMs and serves the
// scaling API until SIGTERM or SIGINT, then stops every JVM. If it is
// killed outright, its JVMs die by their parent-death signal and its
// cluster directory is removed by kafkatest's reaper.
func cmdServe(args []string) error {
	var f clusterFlags
	fs := newFlagSet("serve")
	f.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := f.validate(); err != nil {
		return err
	}
	racks, _ := parseRacks(f.racks)
	dir, err := absDir(f.dir)
	if err != nil {
		return err
	}
	token := os.Getenv(envToken)
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		log.Printf("%v: stopping", sig)
		cancel()
	}()

	start, err := kafkatest.ProcessStartTime(os.Getpid())
	if err != nil {
		return err
	}
	st := &state{
		SupervisorPID: os.Getpid(), SupervisorStart: start,
		ClusterID: f.clusterID, APIURL: "http://" + f.apiAddr,
		ClusterDir: clusterDir(dir), InitialBrokers: f.brokers, Racks: racks,
	}
	if err := writeState(dir, st); err != nil {
		return err
	}
	defer os.Remove(statePath(dir))

	// Bind first: a taken port should fail before the JVMs start.
	ln, err := net.Listen("tcp", f.apiAddr)
	if err != nil {
		return fmt.Errorf("the scaling API cannot listen on %s: %w", f.apiAddr, err)
	}
	defer ln.Close()

	log.Printf("starting Kafka %s: %d brokers in racks %v, files in %s", kafkatest.KafkaVersion, f.brokers, racks, st.ClusterDir)
	c, err := kafkatest.Start(ctx, kafkatest.Options{
		Brokers: f.brokers, Racks: racks, Dir: st.ClusterDir, Logf: log.Printf,
	})
	if err != nil {
		return err
	}
	defer func() {
		if err := c.Stop(); err != nil {
			log.Printf("stopping the cluster: %v", err)
		}
		log.Printf("stopped")
	}()

	api := kafkatest.NewScalingAPI(c, f.clusterID, token)
	defer api.Close()
	srv := &http.Server{Handler: logRequests(api), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	st.Ready, st.KafkaClusterID, st.BootstrapServer = true, c.ClusterID(), c.BootstrapServers()
	if err := writeState(dir, st); err != nil {
		return err
	}
	log.Printf("ready: bootstrap servers %v, scaling API %s/v1/clusters/%s (token required: %t)",
		st.BootstrapServer, st.APIURL, f.clusterID, token != "")

	// Scaling changes the running brokers; status seeds its Kafka client
	// from the state, so keep it current.
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case err := <-served:
			log.Printf("the scaling API stopped: %v", err)
			break loop
		case <-tick.C:
			if now := c.BootstrapServers(); len(now) > 0 && !slices.Equal(now, st.BootstrapServer) {
				st.BootstrapServer = now
				if err := writeState(dir, st); err != nil {
					log.Printf("updating %s: %v", statePath(dir), err)
				}
			}
		}
	}
	shutdownCtx, cancelShutdown := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelShutdown()
	_ = srv.Shutdown(shutdownCtx)
	return nil
}

// logRequests logs method, path, status and duration; never headers, which
// carry the token.
func logRequests(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		began := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		log.Printf("%s %s -> %d (%v)", r.Method, r.URL.Path, rec.status, time.Since(began).Round(time.Millisecond))
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}
