package csi

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// controller is the Controller service of a node plugin: volumes are
// provisioned statically (a PersistentVolume names its dataset) or inline,
// so it creates and attaches nothing. It answers ControllerGetCapabilities
// with one capability of type UNKNOWN, as mountpoint-s3's driver does:
// csi-sanity wants a non-empty list before its Node tests. Every other
// call is Unimplemented.
type controller struct {
	csi.UnimplementedControllerServer
}

func (controller) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	return &csi.ControllerGetCapabilitiesResponse{
		Capabilities: []*csi.ControllerServiceCapability{{
			Type: &csi.ControllerServiceCapability_Rpc{
				Rpc: &csi.ControllerServiceCapability_RPC{Type: csi.ControllerServiceCapability_RPC_UNKNOWN},
			},
		}},
	}, nil
}
