package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The test node's network: a bridge with the node's address, the pod range
// behind it, and a Service range. Machine-wide names: one Cluster per
// machine at a time (/run/kubectl-assisted/cluster.lock), because kube-proxy owns the host's KUBE-*
// iptables chains.
const (
	NodeName       = "kat-node"
	NodeIP         = "10.89.0.1"
	podCIDR        = "10.89.0.0/16"
	serviceCIDR    = "10.90.0.0/24"
	bridgeName     = "katbr0"
	kubeletPort    = 10250
	clusterLockTTL = 30 * time.Minute
)

// Cluster is a one-node Kubernetes cluster on this machine, every part of it
// real and built from k8s.io/kubernetes at the harness's version: etcd,
// kube-apiserver (with the CRDs, serving on the node's address), a
// kube-controller-manager (Jobs, Deployments, PV binding, garbage
// collection, namespaces), a kube-scheduler, and the node: containerd and
// runc from Debian, the kubelet, the CNI bridge plugin and kube-proxy. Its
// images are built here (Image) and served by a registry on loopback that
// containerd uses as the mirror of their registries (quay.io, ...): nothing
// is pulled from the internet. Its volumes are local PersistentVolumes.
type Cluster struct {
	*Kube
	dir      string
	socket   string
	certsDir string
	mirror   *Registry
	procs    []*Process
	lock     *os.File
	kubelet  *Process
	ctrd     *Process

	mu       sync.Mutex
	mirrored map[string]bool
}

var (
	sharedClusterOnce sync.Once
	sharedCluster     *Cluster
	sharedClusterErr  error
)

// SharedCluster returns the test process's cluster with a node, starting it
// on first use (about 20 s). It lives until Main returns; tests isolate
// themselves with Namespace and LocalVolumes' storage class.
func SharedCluster(t testing.TB) *Cluster {
	t.Helper()
	sharedClusterOnce.Do(func() {
		sharedCluster, sharedClusterErr = startCluster()
		if sharedCluster != nil {
			atExit(sharedCluster.Stop)
		}
	})
	if sharedClusterErr != nil {
		Unavailable(t, "test cluster with a node (kubelet, containerd, runc)", sharedClusterErr)
	}
	return sharedCluster
}

// nodeUser is the kubelet's identity; with only RBAC authorizing (no Node
// authorizer), it is also in system:masters.
const nodeUser = "system:node:" + NodeName

func startCluster() (c *Cluster, err error) {
	if !isRoot() {
		return nil, errors.New("the kubelet, containerd and the pod network need root")
	}
	bins := map[string]string{}
	for _, name := range []string{"kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy"} {
		if bins[name], err = Tool(name); err != nil {
			return nil, fmt.Errorf("%s binary: %w", name, err)
		}
	}
	for _, name := range []string{"containerd", "containerd-shim-runc-v2", "runc", "ctr", "iptables", "ip"} {
		if bins[name], err = exec.LookPath(name); err != nil {
			return nil, fmt.Errorf("%s (Debian packages containerd, runc, iptables, iproute2): %w", name, err)
		}
	}
	if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
		return nil, fmt.Errorf("CNI plugins (Debian package containernetworking-plugins): %w", err)
	}

	lock, err := lockMachine()
	if err != nil {
		return nil, err
	}
	c = &Cluster{lock: lock, mirrored: map[string]bool{}}
	defer func() {
		if err != nil {
			c.Stop()
			c = nil
		}
	}()
	cleanStale()
	if c.dir, err = os.MkdirTemp("", "kat-cluster-"); err != nil {
		return c, err
	}
	if err := os.WriteFile(stateFile(), []byte(c.dir+"\n"), 0o644); err != nil {
		return c, err
	}
	if err := setupBridge(); err != nil {
		return c, err
	}
	c.Kube, err = startKubeWith(kubeOptions{
		BindAddress:  NodeIP,
		ServiceRange: serviceCIDR,
		// The API server reaches the kubelet (logs, exec) by its address.
		ExtraArgs: []string{"--kubelet-preferred-address-types=InternalIP"},
		Users:     []TokenUser{{Name: nodeUser, Groups: []string{"system:nodes", "system:masters"}}},
	})
	if err != nil {
		return c, err
	}
	admin := c.Kubeconfig
	nodeKubeconfig := filepath.Join(c.dir, "kubelet.kubeconfig")
	if err := c.WriteKubeconfig(nodeKubeconfig, nodeUser, "default"); err != nil {
		return c, err
	}
	start := func(name string, args ...string) (*Process, error) {
		p, err := StartProcess(name, exec.Command(bins[name], args...))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		c.procs = append(c.procs, p)
		return p, nil
	}
	caFile := filepath.Join(c.Dir, "certs", "apiserver.crt")
	kcm, err := start("kube-controller-manager", "--kubeconfig", admin,
		"--authentication-kubeconfig", admin, "--authorization-kubeconfig", admin,
		"--root-ca-file", caFile, "--service-account-private-key-file", filepath.Join(c.Dir, "sa.key"),
		"--use-service-account-credentials=false",
		// CSRs are the add-nodes tests' to approve; node CIDRs are the CNI config's.
		"--controllers", "*,-csrsigning,-csrapproving,-csrcleaner,-nodeipam",
		"--bind-address", "127.0.0.1", "--secure-port", "0", "--leader-elect=false")
	if err != nil {
		return c, err
	}
	sched, err := start("kube-scheduler", "--kubeconfig", admin,
		"--authentication-kubeconfig", admin, "--authorization-kubeconfig", admin,
		"--bind-address", "127.0.0.1", "--secure-port", "0", "--leader-elect=false")
	if err != nil {
		return c, err
	}

	if err := c.startContainerd(bins["containerd"]); err != nil {
		return c, err
	}
	if err := c.importSandboxImage(bins["ctr"]); err != nil {
		return c, err
	}
	if err := makeCgroups("kat"); err != nil {
		return c, err
	}
	kubeletConfig := filepath.Join(c.dir, "kubelet.yaml")
	if err := os.WriteFile(kubeletConfig, []byte(c.kubeletConfig()), 0o644); err != nil {
		return c, err
	}
	c.kubelet, err = start("kubelet", "--config", kubeletConfig, "--kubeconfig", nodeKubeconfig,
		"--hostname-override", NodeName, "--node-ip", NodeIP, "--root-dir", filepath.Join(c.dir, "kubelet"), "--v=1")
	if err != nil {
		return c, err
	}
	proxyConfig := filepath.Join(c.dir, "kube-proxy.yaml")
	if err := os.WriteFile(proxyConfig, []byte(c.proxyConfig()), 0o644); err != nil {
		return c, err
	}
	proxy, err := start("kube-proxy", "--config", proxyConfig)
	if err != nil {
		return c, err
	}

	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return c, err
	}
	err = waitForAll([]*Process{kcm, sched, c.ctrd, c.kubelet, proxy}, 120*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		n, err := cs.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !nodeReady(n) {
			return fmt.Errorf("node %s not Ready: %v", NodeName, n.Status.Conditions)
		}
		// Pods reach the API server through the kubernetes Service.
		out, err := exec.Command(bins["iptables"], "-w", "-t", "nat", "-S", "KUBE-SERVICES").CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("default/kubernetes:https")) {
			return fmt.Errorf("kube-proxy has not programmed the kubernetes Service yet: %v %s", err, out)
		}
		// Pods need the default service account (the controller-manager's).
		_, err = cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err
	})
	if err != nil {
		return c, fmt.Errorf("test cluster did not become ready: %w", err)
	}
	c.mirror, err = startMirror()
	return c, err
}

func nodeReady(n *corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// lockMachine takes the machine's cluster lock, waiting for another test
// process's cluster to go.
func lockMachine() (*os.File, error) {
	if err := os.MkdirAll(machineDir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(machineDir, "cluster.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(clusterLockTTL)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("another test process holds the machine's test cluster (%s) for over %s", f.Name(), clusterLockTTL)
		}
		time.Sleep(time.Second)
	}
}

// machineDir holds the machine's cluster lock and the directory of the
// cluster that holds it: per machine, not per checkout or tool cache, since
// the node's network, cgroups and KUBE-* rules are the machine's.
const machineDir = "/run/kubectl-assisted"

func stateFile() string { return filepath.Join(machineDir, "cluster.dir") }

// cleanStale removes what a test process that was killed left: its
// processes (containerd's shims and the containers under them outlive it),
// mounts, cgroups and directory, and kube-proxy's rules.
func cleanStale() {
	b, err := os.ReadFile(stateFile())
	if err != nil {
		return
	}
	dir := strings.TrimSpace(string(b))
	if dir == "" || !strings.HasPrefix(filepath.Base(dir), "kat-cluster-") {
		return
	}
	teardown(dir)
}

// teardown kills every process started for the cluster in dir (their
// command lines name it) with their descendants, unmounts what is mounted
// under it, removes the kubelet's cgroups and the directory, and has
// kube-proxy remove its rules.
func teardown(dir string) {
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(cmdline, []byte(dir)) {
			killTree(pid)
		}
	}
	unmountUnder(dir)
	removeCgroups("kat")
	if proxy, err := Tool("kube-proxy"); err == nil {
		_ = exec.Command(proxy, "--cleanup").Run()
	}
	_ = os.RemoveAll(dir)
}

// unmountUnder lazily unmounts every mount point under dir, deepest first.
func unmountUnder(dir string) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var points []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			points = append(points, f[4])
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	for _, p := range points {
		_ = syscall.Unmount(p, syscall.MNT_DETACH)
	}
}

// removeCgroups removes the kubelet's cgroup tree (cgroupRoot /name) from
// every v1 hierarchy, children first; cgroups still in use stay.
func removeCgroups(name string) {
	roots, _ := filepath.Glob("/sys/fs/cgroup/*/" + name)
	for _, root := range roots {
		rmdirTree(cgroupTree(root))
	}
}

// cgroupTree is the cgroup at root and every cgroup under it, parents
// before children.
func cgroupTree(root string) []string {
	var dirs []string
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	return dirs
}

// rmdirTree removes the cgroups of a tree (as cgroupTree lists it),
// children first; those still in use stay.
func rmdirTree(dirs []string) {
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = syscall.Rmdir(dirs[i])
	}
}

// makeCgroups makes the kubelet's cgroupRoot (/name) in every v1
// hierarchy; a new cpuset gets its parent's CPUs and memory nodes.
func makeCgroups(name string) error {
	hierarchies, _ := filepath.Glob("/sys/fs/cgroup/*")
	for _, h := range hierarchies {
		if fi, err := os.Stat(h); err != nil || !fi.IsDir() {
			continue
		}
		dir := filepath.Join(h, name)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("cgroup %s: %w", dir, err)
		}
		if filepath.Base(h) == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				v, err := os.ReadFile(filepath.Join(h, f))
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
					return fmt.Errorf("cgroup %s/%s: %w", dir, f, err)
				}
			}
		}
	}
	return nil
}

// setupBridge makes the pod network's bridge with the node's address (the
// CNI bridge plugin then attaches pods to it), so that the API server can
// listen there before the first pod.
func setupBridge() error {
	if _, err := net.InterfaceByName(bridgeName); err != nil {
		if out, err := exec.Command("ip", "link", "add", bridgeName, "type", "bridge").CombinedOutput(); err != nil {
			return fmt.Errorf("ip link add %s: %v %s", bridgeName, err, out)
		}
	}
	_ = exec.Command("ip", "addr", "add", NodeIP+"/16", "dev", bridgeName).Run() // exists on reuse
	if out, err := exec.Command("ip", "link", "set", bridgeName, "up").CombinedOutput(); err != nil {
		return fmt.Errorf("ip link set %s up: %v %s", bridgeName, err, out)
	}
	return nil
}

// startContainerd runs containerd with its own root, state and socket,
// the CNI bridge for pods, and registry configuration in certsDir (hosts.toml
// per registry host: mirrors and CAs, read at every pull).
func (c *Cluster) startContainerd(bin string) error {
	c.socket = filepath.Join(c.dir, "containerd.sock")
	c.certsDir = filepath.Join(c.dir, "certs.d")
	cniConf := filepath.Join(c.dir, "cni")
	for _, d := range []string{c.certsDir, cniConf} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	conflist := fmt.Sprintf(`{"cniVersion": "1.0.0", "name": "kat", "plugins": [
  {"type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": %q, "rangeStart": "10.89.1.1", "rangeEnd": "10.89.255.254", "gateway": %q}]],
            "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
`, bridgeName, podCIDR, NodeIP)
	if err := os.WriteFile(filepath.Join(cniConf, "10-kat.conflist"), []byte(conflist), 0o644); err != nil {
		return err
	}
	// restrict_oom_score_adj: the harness runs without CAP_SYS_RESOURCE,
	// so runc may not lower a container's oom_score_adj below its own.
	config := fmt.Sprintf(`version = 2
root = %q
state = %q
[grpc]
  address = %q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %q
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %q
`, filepath.Join(c.dir, "containerd"), filepath.Join(c.dir, "containerd-state"), c.socket, SandboxImage, cniConf, c.certsDir)
	path := filepath.Join(c.dir, "containerd.toml")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		return err
	}
	var err error
	c.ctrd, err = StartProcess("containerd", exec.Command(bin, "--config", path))
	if err != nil {
		return fmt.Errorf("containerd: %w", err)
	}
	c.procs = append(c.procs, c.ctrd)
	return waitFor(c.ctrd, 30*time.Second, func() error {
		_, err := os.Stat(c.socket)
		return err
	})
}

// SandboxImage is the pods' sandbox (pause) image, test/harness/images/pause,
// imported into the node's containerd: a pod that only has to run can run it.
const SandboxImage = "kat.local/pause:1"

func (c *Cluster) importSandboxImage(ctr string) error {
	bin, err := buildTestCommand("harness/images/pause", "pause")
	if err != nil {
		return err
	}
	img, err := BuildImage(c.dir, ImageConfig{Entrypoint: []string{"/pause"}, User: "65535"}, []ImageFile{{Path: "/pause", Mode: 0o755, Source: bin}})
	if err != nil {
		return err
	}
	tarball := filepath.Join(c.dir, "pause.tar")
	if err := img.WriteArchive(tarball, SandboxImage); err != nil {
		return err
	}
	// The archive's index names the image (WriteArchive's annotations), and
	// that is the only name given: with --index-name as well, ctr 1.6 makes
	// the same name point first at a new index blob, then at the manifest,
	// and unpacks both; containerd's garbage collector may take the index
	// blob between the two (seen: 1 import in 20 failed with "content digest
	// ... not found", none in 40 without it).
	if out, err := exec.Command(ctr, "--address", c.socket, "-n", "k8s.io", "images", "import", tarball).CombinedOutput(); err != nil {
		return fmt.Errorf("ctr images import %s: %v %s", SandboxImage, err, out)
	}
	return nil
}

// kubeletConfig: cgroup v1 through cgroupfs (this machine's PID 1 is not
// systemd), swap allowed, no eviction thresholds to speak of (a shared
// test machine's disk is not the pods' business), the pods' cgroups under
// /kat, their logs under the cluster's directory.
func (c *Cluster) kubeletConfig() string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
cgroupRoot: /kat
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://%s
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
address: %s
port: %d
readOnlyPort: 0
healthzPort: 0
enforceNodeAllocatable: []
evictionHard: {"memory.available": "1Mi", "nodefs.available": "1%%", "imagefs.available": "1%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
localStorageCapacityIsolation: false
serializeImagePulls: false
resolvConf: /etc/resolv.conf
makeIPTablesUtilChains: false
podLogsDir: %s
`, c.socket, NodeIP, kubeletPort, filepath.Join(c.dir, "pod-logs"))
}

func (c *Cluster) proxyConfig() string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: %s}
mode: iptables
hostnameOverride: %s
clusterCIDR: %s
conntrack: {maxPerCore: 0, min: 0}
metricsBindAddress: "127.0.0.1:%d"
healthzBindAddress: "127.0.0.1:%d"
`, c.Kubeconfig, NodeName, podCIDR, mustFreePort(), mustFreePort())
}

func mustFreePort() int {
	p, err := freePort()
	if err != nil {
		panic(err)
	}
	return p
}

// startMirror serves the node's images: an in-process registry on loopback
// (containerd pulls in the host's network namespace).
func startMirror() (*Registry, error) {
	return startOlareg()
}

// Stop stops every component, the containers under containerd, and removes
// what the cluster left (mounts, cgroups, rules, directory); it releases the
// machine's lock. Safe on a half-started Cluster.
func (c *Cluster) Stop() {
	if c == nil {
		return
	}
	for i := len(c.procs) - 1; i >= 0; i-- {
		c.procs[i].Stop(10 * time.Second)
	}
	if c.mirror != nil {
		c.mirror.Stop()
	}
	if c.dir != "" {
		teardown(c.dir)
		_ = os.Remove(stateFile())
	}
	c.Kube.Stop()
	if c.lock != nil {
		_ = c.lock.Close()
	}
}

// MirrorImage makes image ref (REGISTRY/REPO:TAG, e.g. the operator's
// quay.io/sclorg/postgresql-12-c8s:latest) pullable on the node: it is pushed
// to the node's mirror registry under REPO:TAG and containerd resolves
// REGISTRY through the mirror, as a disconnected cluster's nodes resolve
// their images through their mirror.
func (c *Cluster) MirrorImage(t testing.TB, ref string, img *Image) {
	t.Helper()
	host, repo, tag, err := splitImageRef(ref)
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	key := ref + "@" + img.Digest()
	if c.mirrored[key] {
		return
	}
	if _, err := img.Push(context.Background(), c.mirror, repo, tag); err != nil {
		t.Fatalf("mirror %s: %v", ref, err)
	}
	hosts := fmt.Sprintf("server = \"https://%s\"\n\n[host.\"http://%s\"]\n  capabilities = [\"pull\", \"resolve\"]\n", host, c.mirror.Host)
	if err := c.writeHosts(host, hosts); err != nil {
		t.Fatal(err)
	}
	c.mirrored[key] = true
}

// TrustRegistry makes the node trust reg's TLS certificate (its CA), as a
// cluster's image configuration does for its mirror registry.
func (c *Cluster) TrustRegistry(t testing.TB, reg *Registry) {
	t.Helper()
	scheme := "https"
	var ca string
	if reg.PlainHTTP {
		scheme = "http"
	} else {
		ca = fmt.Sprintf("  ca = %q\n", reg.CAFile)
	}
	hosts := fmt.Sprintf("server = \"%s://%s\"\n\n[host.\"%s://%s\"]\n  capabilities = [\"pull\", \"resolve\"]\n%s", scheme, reg.Host, scheme, reg.Host, ca)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.writeHosts(reg.Host, hosts); err != nil {
		t.Fatal(err)
	}
}

func (c *Cluster) writeHosts(host, content string) error {
	dir := filepath.Join(c.certsDir, host)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "hosts.toml"), []byte(content), 0o644)
}

// splitImageRef splits REGISTRY/REPO[:TAG] (TAG defaults to latest).
func splitImageRef(ref string) (host, repo, tag string, err error) {
	i := strings.IndexByte(ref, '/')
	if i < 0 {
		return "", "", "", fmt.Errorf("image %q: want REGISTRY/REPO[:TAG]", ref)
	}
	host, repo, tag = ref[:i], ref[i+1:], "latest"
	if j := strings.LastIndexByte(repo, ':'); j >= 0 {
		repo, tag = repo[:j], repo[j+1:]
	}
	return host, repo, tag, nil
}

// LocalVolumes makes a storage class of local volumes on the node, bound
// when the first pod uses them (WaitForFirstConsumer, as LVMS and the
// local-storage operator's classes are), and one PersistentVolume per size
// in it, each a fresh directory. The class is named class; tests use a class
// of their own so that only their claims bind their volumes. The volumes
// go when t ends.
func (c *Cluster) LocalVolumes(t testing.TB, class string, sizes ...string) []string {
	t.Helper()
	cs := c.Clientset(t)
	ctx := context.Background()
	wait := storagev1.VolumeBindingWaitForFirstConsumer
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Provisioner: "kubernetes.io/no-provisioner",
		VolumeBindingMode: &wait}
	if _, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("storage class %s: %v", class, err)
	}
	var names []string
	for i, size := range sizes {
		name := fmt.Sprintf("%s-%d", class, i)
		dir := filepath.Join(c.dir, "volumes", name)
		// World-writable, as local-path-provisioner makes its volumes: a
		// container of any UID can use it. (On OpenShift the restricted-v2
		// SCC gives every pod of a namespace one UID and an fsGroup; this
		// node has no SCC admission.)
		if err := os.MkdirAll(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadWriteMany},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				StorageClassName:              class,
				PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: dir}},
				NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{NodeName}}},
				}}}},
			},
		}
		if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			t.Fatalf("persistent volume %s: %v", name, err)
		}
		names = append(names, name)
		t.Cleanup(func() {
			_ = cs.CoreV1().PersistentVolumes().Delete(context.Background(), name, metav1.DeleteOptions{})
			_ = os.RemoveAll(dir)
		})
	}
	t.Cleanup(func() {
		_ = cs.StorageV1().StorageClasses().Delete(context.Background(), class, metav1.DeleteOptions{})
	})
	return names
}

// VolumeDir is the node directory behind a volume LocalVolumes made.
func (c *Cluster) VolumeDir(name string) string { return filepath.Join(c.dir, "volumes", name) }

// PodLogs is a container's log as the kubelet keeps it (through the API
// server), or the error.
func (c *Cluster) PodLogs(t testing.TB, ns, pod, container string) string {
	t.Helper()
	b, err := c.Clientset(t).CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container}).DoRaw(context.Background())
	if err != nil {
		return fmt.Sprintf("(logs of %s/%s %s: %v)", ns, pod, container, err)
	}
	return string(b)
}

// Describe summarises the pods of ns, their containers' states and the
// namespace's events, and the last lines of each container's log: for
// failure messages.
func (c *Cluster) Describe(t testing.TB, ns string) string {
	t.Helper()
	cs := c.Clientset(t)
	ctx := context.Background()
	var b strings.Builder
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "pod %s: %s on %q\n", p.Name, p.Status.Phase, p.Spec.NodeName)
		for _, st := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			fmt.Fprintf(&b, "  %s: ready=%v restarts=%d state=%+v last=%+v\n", st.Name, st.Ready, st.RestartCount, st.State, st.LastTerminationState)
			fmt.Fprintf(&b, "  --- log:\n%s\n", tail(c.PodLogs(t, ns, p.Name, st.Name), 2000))
		}
	}
	events, _ := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if events != nil {
		for _, e := range events.Items {
			fmt.Fprintf(&b, "event %s %s/%s: %s %s\n", e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
	return b.String()
}
