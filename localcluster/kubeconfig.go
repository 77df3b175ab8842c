package localcluster

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// adminUser is the user name of Cluster.Config and Cluster.KubeconfigPath.
const adminUser = "localcluster-admin"

// users are the client certificate users, all in group system:masters: the admin
// and one per component, so that audit logs tell them apart.
var users = []string{adminUser, KubeControllerManager, KubeScheduler, Kwok}

// writePKI writes the CA, the apiserver's serving certificate, the service
// account signing key and one kubeconfig per user, and sets c.Config.
func (c *Cluster) writePKI() error {
	ca, err := newCA()
	if err != nil {
		return err
	}
	serving, err := ca.newServingCert()
	if err != nil {
		return err
	}
	pki := c.path("pki")
	if c.files.caCert, _, err = ca.write(pki, "ca"); err != nil {
		return err
	}
	if c.files.apiserverCert, c.files.apiserverKey, err = serving.write(pki, "apiserver"); err != nil {
		return err
	}
	if c.files.saKey, c.files.saPub, err = writeServiceAccountKeys(pki); err != nil {
		return err
	}
	return c.writeKubeconfigs(ca)
}

func (c *Cluster) writeKubeconfigs(ca *keyPair) error {
	c.files.kubeconfig = map[string]string{}
	for _, user := range users {
		cert, err := ca.newClientCert(user)
		if err != nil {
			return err
		}
		cfg := &rest.Config{
			Host: fmt.Sprintf("https://127.0.0.1:%d", c.ports.apiserver),
			TLSClientConfig: rest.TLSClientConfig{
				CAData: ca.certPEM, CertData: cert.certPEM, KeyData: cert.keyPEM,
			},
		}
		path := c.path("kubeconfig-" + user)
		if user == adminUser {
			path, c.Config = c.path("kubeconfig"), cfg
			c.KubeconfigPath = path
		}
		if err := clientcmd.WriteToFile(*kubeconfig(cfg, user), path); err != nil {
			return err
		}
		c.files.kubeconfig[user] = path
	}
	return nil
}

// kubeconfig returns a kubeconfig with one context, named localcluster, for cfg.
func kubeconfig(cfg *rest.Config, user string) *clientcmdapi.Config {
	const name = "localcluster"
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
	}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
	}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: user}
	kc.CurrentContext = name
	return kc
}
