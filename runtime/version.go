package runtime

// Version is the version of the protomcp runtime, reported as the implementation version.
const Version = "0.3.0"

// SupportPackageIsVersion4 is referenced by generated code to make sure it is compiled against
// a compatible runtime: one with the typed registration and call functions under their own
// names (AddTypedTool, AddTypedResource, AddTypedPrompt, CallTypedTool, ReadTypedResource,
// GetTypedPrompt) and ServerStream[Res] taking the message's struct type. Code generated for
// an earlier runtime names SupportPackageIsVersion3 or below, which this runtime no longer
// declares: the compiler's "undefined" error then says to regenerate. A new change to the
// generated code's contract adds SupportPackageIsVersion5.
const SupportPackageIsVersion4 = true
