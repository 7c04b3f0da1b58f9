// Package wire holds the Agent Host Protocol (AHP) 0.3.0 wire types,
// generated from the AHP JSON schemas, plus a few hand-written helpers.
//
// Conventions (the *.gen.go files follow them mechanically):
//
//   - Type names are the schema $defs names (SessionState, StateAction,
//     SessionToolCallReadyAction, …); field names are the JSON names in Go
//     style (toolCallId → ToolCallID, _meta → Meta).
//   - Required fields are plain values. Optional scalars and structs are
//     pointers with `omitempty`; optional slices and maps use `omitzero`, so
//     nil means absent and a non-nil empty value encodes as [] or {}. A nil
//     required slice or map encodes as [] or {}, never null. JSON null and an
//     absent member decode alike.
//   - Open objects such as _meta are map[string]any; "{}" schemas are any.
//   - Enums are named string types with constants (ActionTypeSessionReady,
//     ToolCallStatusRunning, …). SessionStatus is an integer bitset that keeps
//     bits it does not know (helpers.go).
//   - StringOrMarkdown (helpers.go) accepts both "text" and {"markdown": "…"}.
//   - Discriminated unions (StateAction, ResponsePart, ToolCallState,
//     ToolResultContent, …) are structs { Value any }. Value is a pointer to a
//     variant struct, or a json.RawMessage holding a variant this package does
//     not know, kept verbatim so that it encodes again unchanged. Each union
//     has a New<Union>(v) constructor and an accessor named after its
//     discriminator (StateAction.Type(), ResponsePart.Kind(),
//     ToolCallState.Status(), …). StateAction flattens
//     SessionToolCallConfirmedAction into its two variants,
//     *SessionToolCallApprovedAction and *SessionToolCallDeniedAction.
//   - Variant structs fill their discriminator on encode (Type, Kind,
//     Status, …), so callers never set it: wire.Action(&wire.SessionReadyAction{})
//     encodes with "type":"session/ready".
//   - A union whose variants share no discriminator (SnapshotState,
//     ProtocolNotification) decodes to json.RawMessage; SnapshotState.As
//     decodes it into the state type the resource calls for.
//   - Enums have a Known() method; unknown values decode and encode as is.
//   - Known variant structs drop members they do not declare; unknown
//     variants are kept whole. Marshal (helpers.go) encodes without HTML
//     escaping so raw variants are written back byte for byte.
//   - Sequence numbers (serverSeq, clientSeq, fromSeq, lastSeenServerSeq) and
//     timestamps (createdAt, modifiedAt, timestamp; milliseconds) are int64;
//     counts are int; other numbers are float64.
//
// The schemas come from TypeScript and lose some information (enum values,
// `{ items: T[] }` shapes); overrides.json, beside this file, restores it.
package wire

//go:generate go run ../../internal/wiregen -schema ../shared/ahp/0.3.0/schema -overrides overrides.json -pkg wire -version 0.3.0 -out .
