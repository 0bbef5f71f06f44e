// Package nodeid makes and reads the ids of what lives on one node:
// executions and session sandboxes. One supervisor runs per node, and
// what it holds lives and dies there (DESIGN.md, "Nodes and scale"), so
// an id names the node that owns it and the run of the supervisor that
// made it. A request that reaches another node, or a supervisor that has
// restarted since, is then answered with the owner (OtherNodeError,
// EarlierRunError) instead of a bare "not found".
//
// The format, one string:
//
//	NODE "_" RUN "_" RANDOM
//
//	NODE    the node's name: an RFC 1123 DNS subdomain (a-z, 0-9, '-' and
//	        '.', at most 253 characters), which is how Kubernetes names
//	        nodes; never contains '_'
//	RUN     8 lowercase hex digits, drawn at random once per supervisor
//	        run (per Issuer)
//	RANDOM  32 lowercase hex digits: 128 random bits per id
//
// for example "worker-3.example.internal_5f0c2a9e_0b9c3e41d7a24c59a1f3e2b8c4d6a701".
// Every character is one of [a-z0-9._-], so an id needs no escaping in a
// URL path or query, as one shell word, in a file name, or in a
// "SANDBOX:PATH" argument (it holds no ':' and no '/'). Clients treat ids
// as opaque strings (ProDisco's do); only supervisors parse them.
//
// The package is pure Go, knows no gRPC, and is safe for concurrent use.
package nodeid
