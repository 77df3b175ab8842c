package main

import (
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cueop/cueop/engine/identity"
)

// Environment variables the generated Deployment patch sets: the defaults
// of the identity flags of `cueop run`, as `cueop manifests` was given
// them (the Deployment's args are written by hand, and config/sharded
// replaces them). POD_NAMESPACE, from the downward API, is the default
// identity namespace when none is set.
const (
	identityNamespaceEnv = "CUEOP_IDENTITY_NAMESPACE"
	serviceAccountsEnv   = "CUEOP_SERVICE_ACCOUNTS" // Kind.group=name, separated by spaces
	bindNamespacesEnv    = "CUEOP_BIND_NAMESPACES"  // Kind.group=ns1,ns2, separated by spaces
	sharedIdentityEnv    = "CUEOP_SHARED_IDENTITY"
	podNamespaceEnv      = "POD_NAMESPACE"
)

// operatorServiceAccount is the controller's own ServiceAccount as
// config/default deploys it (config/rbac/service_account.yaml).
var operatorServiceAccount = identity.ServiceAccount{Namespace: identity.DefaultNamespace, Name: "cueop-controller"}

// identityFlags are the administrator's mapping of kinds to
// ServiceAccounts, for `cueop run`, `cueop manifests` and `cueop vet`.
type identityFlags struct {
	namespace                       string
	serviceAccounts, bindNamespaces []string
	shared                          bool
}

// register adds the flags; namespace is the default of
// --identity-namespace.
func (f *identityFlags) register(fl *pflag.FlagSet, namespace string) {
	f.registerActing(fl, namespace)
	fl.StringArrayVar(&f.bindNamespaces, "bind-namespaces", nil,
		"Kind.group=ns1,ns2: bind a kind's rights in these namespaces only (RoleBindings; default: every namespace); repeatable")
}

// registerActing adds the flags that say which ServiceAccount each kind
// acts as, not where it is bound (`cueop diff`: the label of the identity
// is on every child).
func (f *identityFlags) registerActing(fl *pflag.FlagSet, namespace string) {
	fl.StringVar(&f.namespace, "identity-namespace", namespace, "namespace of the kinds' ServiceAccounts")
	fl.StringArrayVar(&f.serviceAccounts, "service-account", nil,
		"Kind.group=name: the ServiceAccount a kind acts as (default cueop-<crd name>); repeatable")
	fl.BoolVar(&f.shared, "shared-identity", false,
		"every kind acts as the operator itself, with one role holding every kind's rights (default: each kind acts as its own ServiceAccount)")
}

// runIdentityNamespace is the default of `cueop run --identity-namespace`:
// the pod's namespace, else identity.DefaultNamespace.
func runIdentityNamespace() string {
	if ns := os.Getenv(podNamespaceEnv); ns != "" {
		return ns
	}
	return identity.DefaultNamespace
}

// fromEnv takes the generated Deployment patch's variables as the defaults
// of the flags cmd was not given.
func (f *identityFlags) fromEnv(cmd *cobra.Command) {
	fl := cmd.Flags()
	if v, ok := os.LookupEnv(identityNamespaceEnv); ok && v != "" && !fl.Changed("identity-namespace") {
		f.namespace = v
	}
	if v, ok := os.LookupEnv(serviceAccountsEnv); ok && !fl.Changed("service-account") {
		f.serviceAccounts = strings.Fields(v)
	}
	if v, ok := os.LookupEnv(bindNamespacesEnv); ok && fl.Lookup("bind-namespaces") != nil && !fl.Changed("bind-namespaces") {
		f.bindNamespaces = strings.Fields(v)
	}
	if b, err := strconv.ParseBool(os.Getenv(sharedIdentityEnv)); err == nil && !fl.Changed("shared-identity") {
		f.shared = b
	}
}

// config is the mapping the flags give; nil with --shared-identity.
func (f *identityFlags) config() (*identity.Config, error) {
	if f.shared {
		return nil, nil
	}
	c := &identity.Config{Namespace: f.namespace}
	if err := c.ParseServiceAccounts(f.serviceAccounts); err != nil {
		return nil, err
	}
	return c, c.ParseNamespaces(f.bindNamespaces)
}

// env are the Deployment's variables that make `cueop run` act with these
// flags.
func (f *identityFlags) env() []any {
	return []any{
		map[string]string{"name": identityNamespaceEnv, "value": f.namespace},
		map[string]string{"name": serviceAccountsEnv, "value": strings.Join(f.serviceAccounts, " ")},
		map[string]string{"name": bindNamespacesEnv, "value": strings.Join(noSpaces(f.bindNamespaces), " ")},
		map[string]string{"name": sharedIdentityEnv, "value": strconv.FormatBool(f.shared)},
		map[string]any{"name": podNamespaceEnv, "valueFrom": map[string]any{"fieldRef": map[string]string{"fieldPath": "metadata.namespace"}}},
	}
}

// noSpaces drops the spaces of each value ("Kind.group=a, b" is one value).
func noSpaces(values []string) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = strings.ReplaceAll(v, " ", "")
	}
	return out
}
