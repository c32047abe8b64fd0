package runtime

// SupportPackageIsVersion1 is referenced by code generated before interceptors, which still
// compiles against this runtime.
const SupportPackageIsVersion1 = true

// SupportPackageIsVersion2 is referenced by generated code to make sure it is compiled against
// a compatible runtime: one whose AddTool takes HandlerOptions. A new change to the generated
// code's contract adds SupportPackageIsVersion3.
const SupportPackageIsVersion2 = true

// Version is the version of the protomcp runtime, reported as the implementation version.
const Version = "0.2.0"

// SupportPackageIsVersion3 is referenced by generated code that needs prompts, resources and
// server-streaming tools from proto (AddPrompt, AddResource, AddStreamTool) and
// UnimplementedMethods.
const SupportPackageIsVersion3 = true
