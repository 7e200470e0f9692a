package pipeline

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
)

// dockerConfig is a Docker config file's credentials, the
// .dockerconfigjson of a kubernetes.io/dockerconfigjson Secret.
type dockerConfig struct {
	Auths map[string]dockerAuth `json:"auths"`
}

type dockerAuth struct {
	Auth          string `json:"auth"`
	Username      string `json:"username"`
	Password      string `json:"password"`
	IdentityToken string `json:"identitytoken"`
	RegistryToken string `json:"registrytoken"`
}

// DockerConfigKeychain is the keychain of a Docker config file's "auths"
// (a kubernetes.io/dockerconfigjson Secret's .dockerconfigjson): each
// registry's credentials by its host, written with or without a scheme
// and path ("https://registry.example/v1/"). A registry it does not
// name is accessed anonymously.
func DockerConfigKeychain(configJSON []byte) (authn.Keychain, error) {
	var cfg dockerConfig
	if err := json.Unmarshal(configJSON, &cfg); err != nil {
		return nil, fmt.Errorf("cannot read the registry credentials: %w", err)
	}
	k := dockerKeychain{}
	for host, a := range cfg.Auths {
		c := authn.AuthConfig{Username: a.Username, Password: a.Password, IdentityToken: a.IdentityToken, RegistryToken: a.RegistryToken}
		if a.Auth != "" {
			dec, err := base64.StdEncoding.DecodeString(a.Auth)
			if err != nil {
				return nil, fmt.Errorf("cannot read the registry credentials of %s: auth is not base64: %w", host, err)
			}
			user, pass, ok := strings.Cut(string(dec), ":")
			if !ok {
				return nil, fmt.Errorf("cannot read the registry credentials of %s: auth is not user:password", host)
			}
			c.Username, c.Password = user, pass
		}
		k[registryHost(host)] = c
	}
	return k, nil
}

type dockerKeychain map[string]authn.AuthConfig

func (k dockerKeychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	if c, ok := k[r.RegistryStr()]; ok {
		return authn.FromConfig(c), nil
	}
	return authn.Anonymous, nil
}

// registryHost is the host[:port] of a Docker config's registry key.
func registryHost(key string) string {
	key = strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	host, _, _ := strings.Cut(key, "/")
	if host == "docker.io" {
		return "index.docker.io"
	}
	return host
}
