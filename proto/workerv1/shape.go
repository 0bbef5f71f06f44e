package workerv1

import "google.golang.org/protobuf/proto"

// Shape returns req without what a prepared runtime process receives
// when it is released (program, stdin) and what does not reach the
// process (the proxy's broker id, and Keep, which only says how long a
// prepared process lives): two requests of one shape start the
// same process, so a process prepared for one (Worker.Prepare) serves the
// other. (Not generated: written by hand beside the generated code.)
func Shape(req *RunRequest) *RunRequest {
	shape := proto.Clone(req).(*RunRequest)
	shape.Program, shape.Stdin, shape.ProxyBrokerId, shape.Keep = nil, nil, 0, false
	return shape
}

// SameShape reports whether a and b have one Shape.
func SameShape(a, b *RunRequest) bool { return proto.Equal(Shape(a), Shape(b)) }
