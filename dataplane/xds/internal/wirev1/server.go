package wirev1

import (
	"encoding/json"
	"fmt"
	"os"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Recording is the first response the old server sent a proxy subscribing with nothing held, as
// testdata/wire/v1/response.json holds it: each resource's JSON document as sent.
type Recording struct {
	SystemVersionInfo string             `json:"systemVersionInfo"`
	TypeURL           string             `json:"typeUrl"`
	Resources         []RecordedResource `json:"resources"`
}

// RecordedResource is one resource of a Recording.
type RecordedResource struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	TypeURL string `json:"typeUrl"`
	// Value is the JSON document the BytesValue wrapped.
	Value string `json:"value"`
}

// LoadRecording reads a Recording.
func LoadRecording(path string) (*Recording, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read recording: %w", err)
	}
	var r Recording
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("decode recording %s: %w", path, err)
	}
	return &r, nil
}

// Response is the recorded response with the given nonce, wrapped as the old server wrapped it.
func (r *Recording) Response(nonce string) (*discoveryv3.DeltaDiscoveryResponse, error) {
	resp := &discoveryv3.DeltaDiscoveryResponse{SystemVersionInfo: r.SystemVersionInfo, TypeUrl: r.TypeURL, Nonce: nonce}
	for _, res := range r.Resources {
		value, err := proto.Marshal(wrapperspb.Bytes([]byte(res.Value)))
		if err != nil {
			return nil, fmt.Errorf("wrap %q: %w", res.Name, err)
		}
		resp.Resources = append(resp.Resources, &discoveryv3.Resource{Name: res.Name, Version: res.Version,
			Resource: &anypb.Any{TypeUrl: res.TypeURL, Value: value}})
	}
	return resp, nil
}

// Answer is what a proxy did on one stream of a Server.
type Answer struct {
	// Subscribe is the stream's first request.
	Subscribe *discoveryv3.DeltaDiscoveryRequest
	// Nack is the rejection's message; empty for an ACK.
	Nack string
}

// Server plays an operator of the old release that holds the recorded config of Gateway: to each
// stream that subscribes with nothing held it sends Recording, as that server sent a new proxy its
// first config, and reports the proxy's answer on Answers. It checks requests with the old
// server's rules; its mutual TLS is the gRPC server's.
type Server struct {
	discoveryv3.UnimplementedAggregatedDiscoveryServiceServer
	Gateway   string
	Recording *Recording
	Answers   chan<- Answer
}

// DeltaAggregatedResources serves one stream.
func (s *Server) DeltaAggregatedResources(stream discoveryv3.AggregatedDiscoveryService_DeltaAggregatedResourcesServer) error {
	req, err := stream.Recv()
	if err != nil {
		return nil
	}
	// The old server's checks of a subscription, with its messages.
	if req.GetTypeUrl() != TypeURL {
		return status.Errorf(codes.InvalidArgument, "unsupported type %q, want %q", req.GetTypeUrl(), TypeURL)
	}
	if names := req.GetResourceNamesSubscribe(); len(names) != 1 || names[0] == "" {
		return status.Errorf(codes.InvalidArgument, "want exactly one gateway in resource_names_subscribe, got %q", names)
	}
	if req.GetNode().GetId() == "" {
		return status.Error(codes.InvalidArgument, "the first request must carry node.id")
	}
	if req.GetResourceNamesSubscribe()[0] != s.Gateway || len(req.GetInitialResourceVersions()) > 0 {
		return status.Error(codes.Unimplemented, "the recording serves a new proxy of its gateway only")
	}
	resp, err := s.Recording.Response("1")
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	if err := stream.Send(resp); err != nil {
		return err
	}
	for {
		r, err := stream.Recv()
		if err != nil {
			return nil
		}
		if r.GetTypeUrl() != TypeURL || len(r.GetResourceNamesSubscribe()) > 0 || len(r.GetResourceNamesUnsubscribe()) > 0 {
			return status.Error(codes.InvalidArgument, "a stream subscribes to exactly one gateway, once")
		}
		if r.GetResponseNonce() != resp.GetNonce() {
			continue // the old server ignored answers to anything but the pending response
		}
		s.Answers <- Answer{Subscribe: req, Nack: r.GetErrorDetail().GetMessage()}
	}
}
