// Package profile holds sandbox profiles: named sets of defaults for
// session sandboxes (runtime, limits, lifetime, idle timeout) that the
// server is configured with (`execfarm serve --sandbox-profiles FILE`).
// A create names one (execfarm.v1 CreateSandboxRequest.profile; the MCP
// tool create_sandbox's warmpool, seed 001's warm pool name) and may
// override any of its values within the server's ceilings. A profile
// named "default" always exists: the server's defaults unless the file
// defines it.
//
// A profile starts no sandbox ahead of demand: a session sandbox starts
// when it is created, whatever its profile.
//
// The file is YAML (or JSON), at most MaxFileBytes, with at most
// MaxProfiles profiles; unknown fields are errors:
//
//	profiles:
//	  default:                  # creates that name no profile
//	    runtime: shell          # goja, node, shell or python
//	    limits:                 # execfarm's ResourceLimits, by field name
//	      max_memory_bytes: 536870912
//	      timeout_ms: 60000     # each exec's default timeout
//	    shutdownAfterSeconds: 300
//	  python-large:
//	    description: Python with 2 GiB and two cores
//	    runtime: python
//	    limits: {max_memory_bytes: 2147483648, max_cpu_percent: 200, workspace_bytes: 536870912}
//	    idleTimeoutSeconds: 600
//
// Names are DNS labels (1 to 63 lower-case letters, digits and '-').
// limits takes the fields of prodisco.sandbox.v1.ResourceLimits
// (max_memory_bytes, max_cpu_percent, max_file_descriptors,
// max_processes, max_output_bytes, timeout_ms, cpu_time_ms,
// workspace_bytes, or their lowerCamelCase forms); a field left out is
// the server's default, and each must be within the server's ceilings
// (Set.Validate, at start). shutdownAfterSeconds left out is the server's
// default lifetime (--sandbox-default-lifetime); 0 is no expiry, which
// only a server without a lifetime ceiling allows. idleTimeoutSeconds left
// out or 0 is no idle timeout.
package profile
