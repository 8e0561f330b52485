// Package csi is the Kubernetes CSI node plugin of "nczarrfs csi": the
// Identity and Node services, and a Controller service that answers only
// ControllerGetCapabilities (csi-sanity asks it before its Node tests).
//
// NodePublishVolume mounts a dataset read-only at the target path with a
// mount daemon of its own (a Mounter: "nczarrfs mount --daemon"), so that
// neither a crash of one volume nor one of the plugin takes down the
// others. Each published volume has a record in the state folder
// (state.go); a restarted plugin adopts the mounts it finds there and in
// /proc/self/mountinfo (Driver.Adopt), and each volume's metrics are served
// again on the plugin's metrics address, labelled by volume id
// (metrics.go).
package csi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// DriverName is the plugin's name, as a CSIDriver object and volumes name
// it: a domain name the project controls, in the form CSI asks for.
const DriverName = "nczarrfs.csi.nczarrfs.io"

// DefaultStateDir is where the plugin keeps its records by default.
const DefaultStateDir = "/var/lib/nczarrfs-csi"

// Options configure a Driver.
type Options struct {
	NodeID   string // NodeGetInfo's node id: the Kubernetes node name
	Version  string // GetPluginInfo's vendor version
	StateDir string // DefaultStateDir when empty
	Mounter  Mounter
	// OptionFlags turns -o options (mountOptions, a PersistentVolume's
	// mountOptions) into mount flags: the mount helper form's parser.
	OptionFlags func(opts []string) ([]string, error)
	// Check checks a volume's mount command line (flags, "--", source,
	// target) with the mount command's own parser; nil checks nothing.
	Check func(args []string) error
	// TrustInline lets inline volumes do what PersistentVolumes do
	// (--trust-inline-volumes): for clusters that trust every pod
	// author. Otherwise they are confined (inline.go).
	TrustInline bool
	// CacheDir and CacheDirSize are the node-wide cache
	// (--cache-dir, --cache-dir-size of the plugin) of every volume that
	// names none of its own; none when empty.
	CacheDir, CacheDirSize string
	// Env is the environment the mount daemons start from (os.Environ()
	// when nil), without the volume's secrets.
	Env    []string
	Logger *slog.Logger
}

// Driver is the plugin. Its methods are safe for concurrent use: calls
// for one target path are serialised, calls for others run at once.
type Driver struct {
	opts  Options
	state stateDir
	log   *slog.Logger
	locks keyedMutex
}

// New returns a Driver; it creates the state folder.
func New(opts Options) (*Driver, error) {
	if opts.NodeID == "" {
		return nil, errors.New("a node id is needed (--node-id)")
	}
	if opts.Mounter == nil {
		return nil, errors.New("no mounter")
	}
	if opts.StateDir == "" {
		opts.StateDir = DefaultStateDir
	}
	if opts.Env == nil {
		opts.Env = os.Environ()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	d := &Driver{opts: opts, state: stateDir{root: opts.StateDir}, log: opts.Logger}
	if err := d.state.init(); err != nil {
		return nil, err
	}
	return d, nil
}

// Listen listens on endpoint (unix:///path/csi.sock, or a path). A socket
// file left by a plugin that was killed is replaced; one that a running
// plugin still answers on is an error.
func Listen(endpoint string) (net.Listener, error) {
	path, err := socketPath(endpoint)
	if err != nil {
		return nil, err
	}
	return listenUnix(path)
}

// Serve serves the CSI services on ln until ctx is done, and then removes
// the socket file.
func (d *Driver) Serve(ctx context.Context, ln net.Listener) error {
	path := ln.Addr().String()
	srv := grpc.NewServer(grpc.UnaryInterceptor(d.logCalls))
	csi.RegisterIdentityServer(srv, identity{d: d})
	csi.RegisterNodeServer(srv, node{d: d})
	csi.RegisterControllerServer(srv, controller{})
	stopped := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			srv.GracefulStop()
		case <-stopped:
		}
	}()
	d.log.Info("serving CSI", "driver", DriverName, "endpoint", path, "node", d.opts.NodeID)
	err := srv.Serve(ln)
	close(stopped)
	os.Remove(path)
	return err
}

// socketPath reads a CSI endpoint: unix:///abs/path, unix:/abs/path or a
// plain absolute path.
func socketPath(endpoint string) (string, error) {
	p := endpoint
	if rest, ok := strings.CutPrefix(p, "unix://"); ok {
		p = rest
	} else if rest, ok := strings.CutPrefix(p, "unix:"); ok {
		p = rest
	}
	if p == "" || !filepath.IsAbs(p) {
		return "", fmt.Errorf("endpoint %q is not unix:///ABSOLUTE/PATH", endpoint)
	}
	return filepath.Clean(p), nil
}

// listenUnix listens on the socket path, replacing a stale socket file.
func listenUnix(path string) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("endpoint %s exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("endpoint %s: another plugin is serving on it", path)
		}
		// Nobody answers: left by a plugin that was killed.
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("removing the stale socket %s: %w", path, err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("endpoint: %w", err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("endpoint: %w", err)
	}
	return ln, nil
}

// logCalls logs each call by method, with its volume and target, and its
// outcome; never its secrets or attributes.
func (d *Driver) logCalls(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	resp, err := handler(ctx, req)
	method := info.FullMethod[strings.LastIndexByte(info.FullMethod, '/')+1:]
	attrs := []any{"method", method, "took", time.Since(start).Round(time.Millisecond)}
	if r, ok := req.(interface {
		GetVolumeId() string
		GetTargetPath() string
	}); ok {
		attrs = append(attrs, "volume", r.GetVolumeId(), "target", r.GetTargetPath())
	}
	switch {
	case err != nil:
		d.log.Warn("call failed", append(attrs, "code", status.Code(err).String(), "err", status.Convert(err).Message())...)
	case strings.HasPrefix(method, "NodePublish"), strings.HasPrefix(method, "NodeUnpublish"):
		d.log.Info("call", attrs...)
	default:
		d.log.Debug("call", attrs...)
	}
	return resp, err
}

// keyedMutex serialises the calls of one key.
type keyedMutex struct {
	mu    sync.Mutex
	locks map[string]*keyLock // GUARDED_BY(mu)
}

type keyLock struct {
	sync.Mutex
	users int // GUARDED_BY(keyedMutex.mu)
}

// lock locks key and returns its unlock.
func (k *keyedMutex) lock(key string) func() {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyLock{}
	}
	l := k.locks[key]
	if l == nil {
		l = &keyLock{}
		k.locks[key] = l
	}
	l.users++
	k.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		if l.users--; l.users == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}

// grpcError maps an error of the plugin to its gRPC status.
func grpcError(err error) error {
	var me *MountError
	switch {
	case err == nil:
		return nil
	case status.Code(err) != codes.Unknown:
		return err // a status already
	case errors.Is(err, errDenied):
		return status.Error(codes.PermissionDenied, strings.TrimPrefix(err.Error(), errDenied.Error()+": "))
	case errors.Is(err, errInvalid):
		return status.Error(codes.InvalidArgument, strings.TrimPrefix(err.Error(), errInvalid.Error()+": "))
	case errors.As(err, &me):
		return status.Error(codes.Internal, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	}
	return status.Error(codes.Internal, err.Error())
}
