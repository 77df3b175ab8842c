package identity

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// DefaultNamespace is the namespace of the kinds' ServiceAccounts when the
// administrator names none: the namespace config/default deploys cueop in.
const DefaultNamespace = "cueop-system"

// Prefix starts the name of every default ServiceAccount, role and binding
// of a kind.
const Prefix = "cueop-"

// ServiceAccount is one ServiceAccount, by namespace and name.
type ServiceAccount struct {
	Namespace, Name string
}

// Username is the user the API server authenticates the ServiceAccount
// as, the one to impersonate.
func (s ServiceAccount) Username() string {
	return "system:serviceaccount:" + s.Namespace + ":" + s.Name
}

func (s ServiceAccount) String() string { return s.Namespace + "/" + s.Name }

// DefaultName is the name of the ServiceAccount (and of its ClusterRole and
// binding) of the kind whose CRD is crdName (plural.group): cueop-<crdName>,
// cut to a valid name with a hash of the whole when too long.
func DefaultName(crdName string) string {
	n := Prefix + crdName
	if len(n) <= validation.DNS1123SubdomainMaxLength {
		return n
	}
	sum := sha256.Sum256([]byte(crdName))
	h := hex.EncodeToString(sum[:])[:10]
	return strings.TrimRight(n[:validation.DNS1123SubdomainMaxLength-11], ".-") + "-" + h
}

// Config is the administrator's mapping of kinds to identities.
type Config struct {
	// Namespace holds the kinds' ServiceAccounts; empty means
	// DefaultNamespace.
	Namespace string
	// ServiceAccounts overrides the default name of a kind's ServiceAccount.
	ServiceAccounts map[schema.GroupKind]string
	// Namespaces binds a kind in these namespaces only (RoleBindings
	// instead of a ClusterRoleBinding); a kind absent is bound in every
	// namespace.
	Namespaces map[schema.GroupKind][]string
}

// For is the ServiceAccount of the kind gk whose CRD is crdName.
func (c *Config) For(gk schema.GroupKind, crdName string) ServiceAccount {
	ns := c.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	name := c.ServiceAccounts[gk]
	if name == "" {
		name = DefaultName(crdName)
	}
	return ServiceAccount{Namespace: ns, Name: name}
}

// BoundNamespaces are the namespaces gk is bound in, sorted; nil means
// every namespace.
func (c *Config) BoundNamespaces(gk schema.GroupKind) []string {
	ns, ok := c.Namespaces[gk]
	if !ok {
		return nil
	}
	out := slices.Clone(ns)
	sort.Strings(out)
	return out
}

// Bound tells whether gk may act in namespace ns ("" is cluster scope,
// always bound: a cluster-scoped child needs a ClusterRole either way).
func (c *Config) Bound(gk schema.GroupKind, ns string) bool {
	list, ok := c.Namespaces[gk]
	return !ok || ns == "" || slices.Contains(list, ns)
}

// ParseServiceAccounts parses flag values "Kind.group=name" into
// c.ServiceAccounts.
func (c *Config) ParseServiceAccounts(values []string) error {
	for _, v := range values {
		gk, name, err := splitFlag(v)
		if err != nil {
			return fmt.Errorf("--service-account %q: %w", v, err)
		}
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return fmt.Errorf("--service-account %q: %s", v, strings.Join(errs, "; "))
		}
		if c.ServiceAccounts == nil {
			c.ServiceAccounts = map[schema.GroupKind]string{}
		}
		c.ServiceAccounts[gk] = name
	}
	return nil
}

// ParseNamespaces parses flag values "Kind.group=ns1,ns2" into
// c.Namespaces; a kind given twice is bound in the namespaces of both.
func (c *Config) ParseNamespaces(values []string) error {
	for _, v := range values {
		gk, list, err := splitFlag(v)
		if err != nil {
			return fmt.Errorf("--bind-namespaces %q: %w", v, err)
		}
		if c.Namespaces == nil {
			c.Namespaces = map[schema.GroupKind][]string{}
		}
		for _, ns := range strings.Split(list, ",") {
			ns = strings.TrimSpace(ns)
			if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
				return fmt.Errorf("--bind-namespaces %q: namespace %q: %s", v, ns, strings.Join(errs, "; "))
			}
			if !slices.Contains(c.Namespaces[gk], ns) {
				c.Namespaces[gk] = append(c.Namespaces[gk], ns)
			}
		}
	}
	return nil
}

// splitFlag splits "Kind.group=value"; the kind must name its group (a
// kind's identity is group and kind).
func splitFlag(v string) (schema.GroupKind, string, error) {
	k, val, ok := strings.Cut(v, "=")
	if !ok || strings.TrimSpace(val) == "" {
		return schema.GroupKind{}, "", fmt.Errorf("want Kind.group=value")
	}
	gk := schema.ParseGroupKind(strings.TrimSpace(k))
	if gk.Kind == "" || gk.Group == "" {
		return schema.GroupKind{}, "", fmt.Errorf("want Kind.group=value, with the kind's group (for example RedisCluster.cache.example.com)")
	}
	return gk, strings.TrimSpace(val), nil
}
