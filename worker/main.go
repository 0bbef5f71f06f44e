package worker

// Main is the worker binary's entry point; it returns the process exit
// status. See the package doc.
func Main() int { return serve() }
