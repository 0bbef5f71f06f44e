package namespace

// IDRange is a contiguous range of host uids and gids given to one sandbox.
type IDRange struct {
	// HostID is the first host uid (and gid) of the range; sandbox id 0 maps to it.
	HostID uint32
	// Size is the number of ids in the range; 0 means 65536.
	Size uint32
}

// SandboxUID is the uid (and gid) inside every sandbox as which runtime
// processes run. It must be below IDRange.Size.
const SandboxUID = 1000

// size returns the effective range size.
func (r IDRange) size() uint32 {
	if r.Size == 0 {
		return 65536
	}
	return r.Size
}

// HostUID returns the host uid that the sandbox's uid id maps to.
func (r IDRange) HostUID(id uint32) uint32 { return r.HostID + id }
