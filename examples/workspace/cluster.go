package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tendhq/tend/examples/workspace/kube"
)

// clusterOptions say which cluster runs the scenario, and how.
type clusterOptions struct {
	kubeconfig string // the cluster's kubeconfig
	image      string // the workspaces' image
	jobImage   string // the storage Jobs' image
	jobsHere   bool   // run the storage Jobs' Pods in this process (kube.JobHost)
}

// credentialsSecret names the Secret the storage Jobs take the object
// storage's credentials from.
const credentialsSecret = "object-storage"

// runCluster runs the scenario on the cluster of c: the containers as Pods
// running c.image, the volumes as claims and the storage jobs as Jobs, in a
// namespace of its own, which it creates and deletes, with the volumes'
// directories under dir on this host and the archives in a.
func runCluster(ctx context.Context, c clusterOptions, dir string, a archives, o ops, out io.Writer) (err error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", c.kubeconfig, err)
	}
	var conns connections
	cfg.Dial = conns.dial
	defer conns.close()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ns, err := newNamespace(ctx, cs)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "workspaces in namespace %s of %s\n", ns, cfg.Host)
	if a, err = a.in(dir); err != nil {
		return err
	}
	sc := kube.StorageConfig{REST: cfg, Namespace: ns, BaseDir: filepath.Join(dir, "volumes"), Objects: a.objects, JobImage: c.jobImage}
	if vars := a.creds.Vars(); len(vars) > 0 {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: credentialsSecret}, StringData: vars}
		if _, err := cs.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create secret %s/%s: %w", ns, credentialsSecret, err)
		}
		sc.CredentialsSecret = credentialsSecret
	}
	storage, err := kube.NewStorage(sc)
	if err != nil {
		return err
	}
	instances, err := kube.NewInstances(kube.InstancesConfig{REST: cfg, Namespace: ns})
	if err != nil {
		return err
	}
	if c.jobsHere {
		host, err := kube.NewJobHost(kube.JobHostConfig{REST: cfg, Namespace: ns, Scratch: dir})
		if err != nil {
			return err
		}
		hostCtx, stopHost := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() { _ = host.Run(hostCtx) })
		defer wg.Wait()
		defer stopHost()
	}
	defer func() {
		// What a failed scenario left, then the namespace; volumes are not
		// namespaced.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		for _, id := range workspaces {
			err = errors.Join(err, instances.Delete(ctx, id), storage.DeleteVolume(ctx, id))
		}
		if derr := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); derr != nil {
			err = errors.Join(err, fmt.Errorf("delete namespace %s: %w", ns, derr))
		} else {
			fmt.Fprintf(out, "namespace %s deleted\n", ns)
		}
	}()
	return play(ctx, world{instances: instances, storage: storage, home: volumeHomes{storage}, image: c.image}, a.objects, o, out)
}

// newNamespace creates a namespace for one run and waits for its default
// service account, without which no Pod is admitted.
func newNamespace(ctx context.Context, cs kubernetes.Interface) (string, error) {
	var b [4]byte
	_, _ = rand.Read(b[:])
	ns := "tend-workspace-" + hex.EncodeToString(b[:])
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("create namespace %s: %w", ns, err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		switch {
		case err == nil:
			return ns, nil
		case !apierrors.IsNotFound(err):
			return "", fmt.Errorf("service account %s/default: %w", ns, err)
		case time.Now().After(deadline):
			return "", fmt.Errorf("namespace %s has no service account default after a minute: does the cluster run kube-controller-manager's serviceaccount-controller?", ns)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// volumeHomes reaches a workspace's home on its volume's directory on this
// host: under kwok no container runs to serve it.
type volumeHomes struct{ storage *kube.Storage }

func (v volumeHomes) dir(ctx context.Context, id string) (string, error) {
	dir, err := v.storage.Dir(ctx, id)
	if err == nil && dir == "" {
		err = fmt.Errorf("claim %s has no volume", kube.ClaimName(id))
	}
	return dir, err
}

func (v volumeHomes) where(ctx context.Context, id string) string {
	dir, err := v.dir(ctx, id)
	if err != nil {
		return fmt.Sprintf("on its volume (%v)", err)
	}
	return "on its volume (" + dir + ")"
}

func (v volumeHomes) put(ctx context.Context, id, file, content string) error {
	dir, err := v.dir(ctx, id)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	return root.WriteFile(file, []byte(content), 0o644)
}

func (v volumeHomes) get(ctx context.Context, id, file string) (string, error) {
	dir, err := v.dir(ctx, id)
	if err != nil {
		return "", err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	b, err := root.ReadFile(file)
	return string(b), err
}

// connections records the connections to the API server, so that a run
// ends them: client-go would keep them open for the life of the process.
type connections struct {
	mu    sync.Mutex // guards conns
	conns []net.Conn
}

func (c *connections) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext(ctx, network, addr)
	if err == nil {
		c.mu.Lock()
		c.conns = append(c.conns, conn)
		c.mu.Unlock()
	}
	return conn, err
}

func (c *connections) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, conn := range c.conns {
		conn.Close()
	}
	c.conns = nil
}
