package main

// readableKindsEnv sets the default of `cueop run --readable-kinds`; the
// generated Deployment patch sets it to the readable kinds given to
// `cueop manifests`.
const readableKindsEnv = "CUEOP_READABLE_KINDS"
