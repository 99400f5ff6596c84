// Package fromproto reads sdk/runtime values out of the generated wire
// messages (sdk/internal/runtimepb): the other direction of sdk/plugin's one
// conversion boundary, one file per concept. Its ObjectDecoder is the hot
// path of an event flood: it decodes the JSON objects events carry as
// json.Unmarshal would, without reflection.
package fromproto
