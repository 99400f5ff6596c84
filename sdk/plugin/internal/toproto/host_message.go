package toproto

import (
	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// The requests and the session stream messages a host sends.

// Describe asks a plugin what it serves, offering the host's protocol
// versions.
func Describe(versions ...uint32) *pb.DescribeRequest {
	return &pb.DescribeRequest{HostProtocolVersions: versions}
}

// Check asks backend whether its runtime is ready; options cross as JSON.
func Check(backend string, req runtime.CheckRequest) (*pb.CheckRequest, error) {
	opts, err := Object(req.Options)
	if err != nil {
		return nil, err
	}
	return &pb.CheckRequest{Backend: backend, Env: req.Env, OptionsJson: opts}, nil
}

// OpenSession is the first message of a new session (Open).
func OpenSession(open *pb.Open) *pb.HostMessage {
	return &pb.HostMessage{Msg: &pb.HostMessage_Open{Open: open}}
}

// ReattachSession is the first message of a stream that takes over a
// lingering session.
func ReattachSession(sessionID string) *pb.HostMessage {
	return &pb.HostMessage{Msg: &pb.HostMessage_Reattach{Reattach: &pb.Reattach{SessionId: sessionID}}}
}

// Prompt starts turn t.
func Prompt(t runtime.Turn) *pb.HostMessage {
	var images []*pb.ImageRef
	for _, im := range t.Images {
		images = append(images, &pb.ImageRef{Path: im.Path, MediaType: im.MediaType})
	}
	return &pb.HostMessage{Msg: &pb.HostMessage_Prompt{Prompt: &pb.Prompt{TurnId: t.ID, Text: t.Text, Images: images, Compact: t.Compact}}}
}

// Cancel cancels turn turnID.
func Cancel(turnID string) *pb.HostMessage {
	return &pb.HostMessage{Msg: &pb.HostMessage_Cancel{Cancel: &pb.Cancel{TurnId: turnID}}}
}

// Close closes the session.
func Close() *pb.HostMessage {
	return &pb.HostMessage{Msg: &pb.HostMessage_Close{Close: &pb.Close{}}}
}

// Decide answers permission request id.
func Decide(id string, d runtime.PermissionDecision) *pb.HostMessage {
	return &pb.HostMessage{Msg: &pb.HostMessage_PermissionDecision{PermissionDecision: PermissionDecision(id, d)}}
}
