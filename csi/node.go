package csi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// node is the Node service.
type node struct {
	csi.UnimplementedNodeServer
	d *Driver
}

// NodeGetCapabilities lists none: no staging (a FUSE mount needs no
// device), no volume statistics.
func (node) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{}, nil
}

func (n node) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: n.d.opts.NodeID}, nil
}

// NodePublishVolume mounts the volume's dataset read-only at the target
// path. Every access mode is served, read-only: a writer mode gets a
// read-only mount (writes fail with EROFS), not an error. Publishing the
// same volume at the same target again succeeds; a mount there whose
// daemon died is mounted again.
func (n node) NodePublishVolume(ctx context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	rec, spec, err := n.d.publishRequest(req)
	if err != nil {
		return nil, grpcError(err)
	}
	if err := n.d.publish(ctx, rec, spec); err != nil {
		return nil, grpcError(err)
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

// publishRequest checks a publish request and returns the record it
// makes and the secrets it brings.
func (d *Driver) publishRequest(req *csi.NodePublishVolumeRequest) (record, volumeSpec, error) {
	var spec volumeSpec
	id, target := req.GetVolumeId(), req.GetTargetPath()
	switch {
	case id == "":
		return record{}, spec, invalidf("volume id is missing")
	case target == "":
		return record{}, spec, invalidf("target path is missing")
	case !filepath.IsAbs(target):
		return record{}, spec, invalidf("target path %q is not absolute", target)
	case req.GetVolumeCapability() == nil:
		return record{}, spec, invalidf("volume capability is missing")
	case req.GetVolumeCapability().GetBlock() != nil:
		return record{}, spec, invalidf("block access is not supported: an nczarrfs volume is a filesystem")
	}
	target = filepath.Clean(target)
	attrs := req.GetVolumeContext()
	src, flags, err := parseAttributes(attrs, req.GetVolumeCapability().GetMount().GetMountFlags(), d.opts.OptionFlags)
	if err != nil {
		return record{}, spec, err
	}
	spec.env, spec.values, err = parseSecrets(req.GetSecrets())
	if err != nil {
		return record{}, spec, err
	}
	// An inline volume the plugin does not trust is confined: checked
	// against the allow-lists, and anonymous unless it has secrets.
	confined := isInline(id, attrs) && !d.opts.TrustInline
	if confined {
		if err := checkInline(attrs, src, flags, req.GetSecrets()); err != nil {
			return record{}, spec, err
		}
		if len(spec.env) == 0 && !slices.Contains(flags, "--no-sign-request") {
			flags = append(flags, "--no-sign-request")
		}
	}
	if d.opts.Check != nil {
		if err := d.opts.Check(append(append(append([]string(nil), flags...), "--"), src, target)); err != nil {
			return record{}, spec, invalidf("%v", err)
		}
	}
	rec := record{VolumeID: id, Target: target, Source: src, Flags: flags, Secrets: len(spec.env) > 0, Confined: confined, Published: time.Now().UTC()}
	return rec, spec, nil
}

// publish mounts rec's volume at its target, unless it is mounted there
// already the same way.
func (d *Driver) publish(ctx context.Context, rec record, spec volumeSpec) error {
	key := volumeKey(rec.VolumeID, rec.Target)
	defer d.locks.lock(key)()
	old, err := d.state.load(key)
	known := err == nil
	switch st := stateOf(rec.Target); {
	case st == mounted && known && old.sameMount(rec) && old.sameSecrets(spec.env):
		return nil // published already
	case st == mounted && known && old.sameMount(rec):
		return d.rotate(ctx, key, old, rec, spec)
	case st == mounted && known:
		return status.Errorf(codes.AlreadyExists, "volume %s is published at %s with other attributes; unpublish it first", rec.VolumeID, rec.Target)
	case st == mounted || st == otherMount:
		return status.Errorf(codes.FailedPrecondition, "target %s is a mount already (%v) that this plugin did not make", rec.Target, st)
	case st == stale:
		d.log.Warn("the volume's mount daemon is gone; mounting it again", "volume", rec.VolumeID, "target", rec.Target)
		if err := unmountAll(rec.Target); err != nil {
			return err
		}
	}
	return d.mount(ctx, key, rec, spec)
}

// mount records rec and starts its mount daemon. The record comes first,
// so a plugin killed while mounting leaves one for the next to adopt; a
// mount that fails leaves none.
func (d *Driver) mount(ctx context.Context, key string, rec record, spec volumeSpec) error {
	if err := os.MkdirAll(rec.Target, 0o750); err != nil {
		return fmt.Errorf("creating the target: %w", err)
	}
	if err := rec.setSecrets(spec.env); err != nil {
		return err
	}
	if err := d.state.save(rec); err != nil {
		return err
	}
	os.Remove(d.state.socket(key, rec)) // a dead daemon's
	err := d.opts.Mounter.Mount(ctx, d.mountRequest(key, rec, rec.Target, spec))
	if err != nil {
		err = scrubError(err, spec.values)
		if stateOf(rec.Target) == mounted {
			// The daemon of a killed plugin's publish, still starting
			// when the next plugin adopted the record, mounted there
			// first: the volume is published.
			d.log.Warn("a mount made meanwhile is there; keeping it", "volume", rec.VolumeID, "target", rec.Target, "err", err)
			return nil
		}
		if rmErr := d.state.remove(key); rmErr != nil {
			d.log.Error("removing the record of a failed mount", "volume", rec.VolumeID, "err", rmErr)
		}
		return err
	}
	d.log.Info("mounted", "volume", rec.VolumeID, "target", rec.Target, "source", rec.Source)
	return nil
}

// mountRequest is the mount of rec at dir with spec's secrets: the
// plugin's node-wide cache (Options.CacheDir) unless the volume names a
// cache of its own, and a confined daemon's environment for a confined
// volume.
func (d *Driver) mountRequest(key string, rec record, dir string, spec volumeSpec) MountRequest {
	flags := slices.Clone(rec.Flags)
	if d.opts.CacheDir != "" && !hasFlag(flags, "--cache-dir") {
		flags = append(flags, "--cache-dir="+d.opts.CacheDir)
		if d.opts.CacheDirSize != "" && !hasFlag(flags, "--cache-dir-size") {
			flags = append(flags, "--cache-dir-size="+d.opts.CacheDirSize)
		}
	}
	env := daemonEnv(d.opts.Env, spec.env)
	if rec.Confined {
		env = confinedEnv(d.opts.Env, spec.env)
	}
	return MountRequest{
		Source:        rec.Source,
		Target:        dir,
		Flags:         flags,
		Env:           env,
		LogFile:       d.state.logFile(key),
		MetricsSocket: d.state.socket(key, rec),
	}
}

// hasFlag reports whether flags set the flag name (--name or
// --name=value).
func hasFlag(flags []string, name string) bool {
	for _, f := range flags {
		if f == name || strings.HasPrefix(f, name+"=") {
			return true
		}
	}
	return false
}

// scrubError takes every secret value out of a mount's error.
func scrubError(err error, values []string) error {
	var me *MountError
	if errors.As(err, &me) {
		return &MountError{Msg: scrub(me.Msg, values)}
	}
	return err
}

// rotate applies the secrets of a republish that differ from those the
// running mount at rec.Target was made with (kubelet's periodic
// republish, requiresRepublish, brings rotated secrets and refreshed
// tokens). The volume is mounted with the new secrets beside the running
// mount first, in the volume's folder: secrets the store refuses fail the
// republish and leave the running mount as it is. Then the running mount
// is unmounted (lazily when files in it are open) and the new one is
// moved into its place, a bind mount, so what serves the target is the
// mount that was just checked.
func (d *Driver) rotate(ctx context.Context, key string, old, rec record, spec volumeSpec) error {
	trial := d.state.trial(key)
	if err := unmountAll(trial); err != nil {
		return err
	}
	if err := os.MkdirAll(trial, 0o700); err != nil {
		return fmt.Errorf("state folder: %w", err)
	}
	rec.SecretsSalt = old.SecretsSalt
	if err := rec.setSecrets(spec.env); err != nil {
		return err
	}
	id := make([]byte, 6)
	rand.Read(id)
	rec.Socket = "metrics-" + hex.EncodeToString(id) + ".sock"
	if err := d.opts.Mounter.Mount(ctx, d.mountRequest(key, rec, trial, spec)); err != nil {
		unmountAll(trial)
		os.Remove(d.state.socket(key, rec))
		return fmt.Errorf("the volume's new secrets: %w (it stays mounted with the secrets it had)", scrubError(err, spec.values))
	}
	if err := unmountAll(rec.Target); err != nil {
		unmountAll(trial)
		return err
	}
	if err := syscall.Mount(trial, rec.Target, "", syscall.MS_BIND, ""); err != nil {
		// The next publish, which finds nothing mounted, mounts the
		// volume again.
		unmountAll(trial)
		return fmt.Errorf("moving the mount with the new secrets to %s: %w", rec.Target, err)
	}
	if err := unmountAll(trial); err != nil {
		d.log.Warn("unmounting the new mount's first place", "volume", rec.VolumeID, "err", err)
	}
	if err := d.state.save(rec); err != nil {
		return err
	}
	d.log.Info("mounted again with the republish's new secrets", "volume", rec.VolumeID, "target", rec.Target)
	return nil
}

// NodeUnpublishVolume unmounts the target (lazily when files in it are
// open) and removes it. A target that is gone already, or not mounted,
// succeeds.
func (n node) NodeUnpublishVolume(ctx context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	id, target := req.GetVolumeId(), req.GetTargetPath()
	switch {
	case id == "":
		return nil, status.Error(codes.InvalidArgument, "volume id is missing")
	case target == "":
		return nil, status.Error(codes.InvalidArgument, "target path is missing")
	case !filepath.IsAbs(target):
		return nil, status.Errorf(codes.InvalidArgument, "target path %q is not absolute", target)
	}
	if err := n.d.unpublish(filepath.Clean(target), id); err != nil {
		return nil, grpcError(err)
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

func (d *Driver) unpublish(target, id string) error {
	key := volumeKey(id, target)
	defer d.locks.lock(key)()
	if err := unmountAll(target); err != nil {
		return err
	}
	if err := unmountAll(d.state.trial(key)); err != nil { // a rotation's, if a plugin was killed in it
		return err
	}
	if err := removeTarget(target); err != nil {
		return err
	}
	if err := d.state.remove(key); err != nil {
		return err
	}
	d.log.Info("unmounted", "volume", id, "target", target)
	return nil
}

// Adopt takes over the volumes a previous plugin published, from the
// state folder and /proc/self/mountinfo, before the plugin serves:
//
//   - a mount that answers is kept as it is (its daemon never stopped);
//   - a mount whose daemon died (a stale FUSE mount, ENOTCONN), or that is
//     gone, is mounted again in place when it needs no secrets; one that
//     had secrets is unmounted cleanly (its target is left, empty) and is
//     mounted again by kubelet's next NodePublishVolume (the CSIDriver's
//     requiresRepublish makes kubelet call it periodically), which
//     brings the secrets: the plugin keeps none;
//   - a record whose target is gone (the pod's folder removed) is dropped.
//
// Volumes are mounted again at once, each bounded by timeout.
func (d *Driver) Adopt(ctx context.Context, timeout time.Duration) error {
	recs, bad, err := d.state.list()
	if err != nil {
		return err
	}
	for key, err := range bad {
		d.log.Warn("dropping an unreadable record", "key", key, "err", err)
		d.state.remove(key)
	}
	done := make(chan struct{}, len(recs))
	for key, rec := range recs {
		go func() {
			defer func() { done <- struct{}{} }()
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			d.adopt(ctx, key, rec)
		}()
	}
	for range recs {
		<-done
	}
	return nil
}

func (d *Driver) adopt(ctx context.Context, key string, rec record) {
	defer d.locks.lock(key)()
	log := d.log.With("volume", rec.VolumeID, "target", rec.Target)
	// A rotation's new mount, not yet moved to the target when the
	// previous plugin was killed: the next republish rotates again.
	if err := unmountAll(d.state.trial(key)); err != nil {
		log.Error("unmounting an unfinished rotation's mount", "err", err)
	}
	st := stateOf(rec.Target)
	switch st {
	case mounted:
		log.Info("adopted the mount of a previous plugin")
		return
	case otherMount:
		log.Warn("the target is another mount now; dropping the record")
		d.state.remove(key)
		return
	case stale:
		if err := unmountAll(rec.Target); err != nil {
			log.Error("unmounting the stale mount", "err", err)
			return
		}
	}
	if _, err := os.Stat(rec.Target); errors.Is(err, fs.ErrNotExist) {
		log.Info("the target is gone; dropping the record")
		d.state.remove(key)
		return
	}
	if rec.Secrets {
		log.Warn("the mount's daemon is gone; unmounted it, and kubelet's next NodePublishVolume mounts it again with its secrets", "was", st.String())
		return
	}
	if err := d.mount(ctx, key, rec, volumeSpec{}); err != nil {
		log.Error("mounting again in place", "err", err)
		return
	}
	log.Info("mounted again in place", "was", st.String())
}
