package standalone

import (
	"fmt"
	"os"

	"github.com/distcache/distcache/dataplane/redisacl"
	"github.com/distcache/distcache/standalone/plan"
)

// writeACLFiles writes the ACL file every local Redis starts from
// (storage.auth), from the password files as they are now. A Redis the
// supervisor restarts later reads the file its shim last saved (ACL SAVE).
func writeACLFiles(p *plan.Plan) error {
	for _, pr := range p.Processes {
		if pr.Kind != plan.Redis || pr.ACLFile == "" {
			continue
		}
		if err := os.MkdirAll(pr.Dir, 0o700); err != nil {
			return fmt.Errorf("cannot create %s: %w", pr.Dir, err)
		}
		if err := redisacl.WriteACLFile(pr.ACLFile, p.RedisLogin); err != nil {
			return fmt.Errorf("cannot start %s: %w", pr.Name, err)
		}
	}
	return nil
}
