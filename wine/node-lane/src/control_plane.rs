//! The control plane the node talks to: Debian's etcd and the kube-apiserver built from
//! Kubernetes' source, on this network namespace's loopback, with token authentication and
//! RBAC on; and `kubectl` (from the same source) for what the lane puts into the API.
//!
//! No controller-manager runs, so nothing fills Endpoints or EndpointSlices from selectors and
//! no namespace is ever finalised: the lane writes a Service's Endpoints and EndpointSlice
//! itself, as the endpoints controllers would, and deletes objects one by one.

use std::fs::File;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use conformance::exec::{Exec, Invocation, execute_with_args};
use conformance::launcher::Native;
use serde_json::Value;

/// The API server answers `/readyz` within this long of starting (about 10 s on 2 cores).
const START_DEADLINE: Duration = Duration::from_secs(120);
const KUBECTL_DEADLINE: Duration = Duration::from_secs(60);
pub const API_PORT: u16 = 6443;
/// The user the NetworkPolicy agent authenticates as: deploy/rbac.yaml's ServiceAccount of
/// the node daemon (not flanneld's).
pub const AGENT_USER: &str = "system:serviceaccount:kube-flannel:cni-win-daemon";
const ETCD_CLIENT: &str = "http://127.0.0.1:2379";

/// etcd and kube-apiserver, stopped when dropped.
#[derive(Debug)]
pub struct ControlPlane {
    etcd: Mutex<Child>,
    /// Stopped and started again by [`ControlPlane::api_server_down`].
    api_server: Mutex<ApiServer>,
    /// The admin's kubectl.
    pub kubectl: Kubectl,
    /// The API server's self-signed serving certificate, which clients trust.
    ca: PathBuf,
    /// kube-proxy's token (user `system:kube-proxy`, which RBAC's default
    /// `system:node-proxier` binding authorises).
    proxy_token: String,
    /// The NetworkPolicy agent's token ([`AGENT_USER`], which deploy/rbac.yaml authorises).
    agent_token: String,
    /// `https://<node IP>:6443`: the serving certificate names the advertised address, not
    /// loopback.
    server: String,
}

impl ControlPlane {
    /// Starts etcd and the API server under `dir`, advertising `node_ip` (the API server's own
    /// Endpoints may not be on loopback) and serving on every address of the namespace.
    pub fn start(kube_bin: &Path, dir: &Path, node_ip: &str) -> Result<ControlPlane, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let admin_token = random_token()?;
        let proxy_token = random_token()?;
        let agent_token = random_token()?;
        let tokens = dir.join("tokens.csv");
        // The policy agent authenticates as deploy/rbac.yaml's ServiceAccount would: RBAC
        // matches a ServiceAccount subject by this user name, so the manifest's own role is
        // what authorises it.
        write(
            &tokens,
            &format!(
                "{admin_token},admin,admin,system:masters\n{proxy_token},system:kube-proxy,kube-proxy\n\
                 {agent_token},{AGENT_USER},cni-win-daemon,\"system:serviceaccounts,system:serviceaccounts:kube-flannel\"\n"
            ),
        )?;
        let key = dir.join("service-account.key");
        openssl(&["genrsa", "-out", &path(&key), "2048"])?;
        let etcd = spawn(
            Command::new("etcd").args([
                "--data-dir",
                &path(&dir.join("etcd")),
                "--listen-client-urls",
                ETCD_CLIENT,
                "--advertise-client-urls",
                ETCD_CLIENT,
                "--listen-peer-urls",
                "http://127.0.0.1:2380",
            ]),
            create(&dir.join("etcd.log"))?,
        )?;
        let certs = dir.join("certs");
        let api_server = ApiServer {
            program: kube_bin.join("kube-apiserver"),
            args: [
                format!("--etcd-servers={ETCD_CLIENT}"),
                "--bind-address=0.0.0.0".to_owned(),
                format!("--advertise-address={node_ip}"),
                format!("--secure-port={API_PORT}"),
                "--insecure-port=0".to_owned(),
                format!("--cert-dir={}", path(&certs)),
                format!("--token-auth-file={}", path(&tokens)),
                "--authorization-mode=Node,RBAC".to_owned(),
                "--service-cluster-ip-range=10.96.0.0/12".to_owned(),
                "--service-node-port-range=30000-32767".to_owned(),
                format!("--service-account-key-file={}", path(&key)),
                format!("--service-account-signing-key-file={}", path(&key)),
                "--service-account-issuer=https://kubernetes.default.svc".to_owned(),
            ]
            .into(),
            log: dir.join("kube-apiserver.log"),
            process: None,
        };
        let ca = certs.join("apiserver.crt");
        let kubectl = Kubectl {
            program: kube_bin.join("kubectl"),
            kubeconfig: dir.join("admin.kubeconfig"),
        };
        let server = format!("https://{node_ip}:{API_PORT}");
        write(
            &kubectl.kubeconfig,
            &kubeconfig(&server, &path(&ca), &admin_token, "admin"),
        )?;
        let plane = ControlPlane {
            etcd: Mutex::new(etcd),
            api_server: Mutex::new(api_server),
            kubectl,
            ca,
            proxy_token,
            agent_token,
            server,
        };
        plane.api_server().start()?;
        plane.wait_ready()?;
        Ok(plane)
    }

    /// Stops the API server, runs `outage` (etcd keeps the cluster meanwhile), starts it
    /// again and waits until it is ready; `outage`'s answer.
    pub fn api_server_down<T>(&self, outage: impl FnOnce() -> T) -> Result<T, String> {
        self.api_server().stop();
        let during = outage();
        self.api_server().start()?;
        self.wait_ready()?;
        Ok(during)
    }

    fn api_server(&self) -> MutexGuard<'_, ApiServer> {
        lock(&self.api_server)
    }

    /// The admin's kubeconfig (`system:masters`), for clients other than [`Kubectl`].
    pub fn admin_kubeconfig(&self) -> &Path {
        &self.kubectl.kubeconfig
    }

    /// Applies deploy/rbac.yaml (its ServiceAccount, ClusterRole and binding) in its
    /// namespace: what authorises [`AGENT_USER`].
    pub fn authorise_agent(&self) -> Result<(), String> {
        self.kubectl
            .apply(&serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "kube-flannel"}}))?;
        let rbac = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/rbac.yaml");
        self.kubectl.apply_file(&rbac)
    }

    /// Writes kube-proxy's kubeconfig to `file`, its CA named by `spell` (as kube-proxy's
    /// platform spells paths).
    pub fn write_proxy_kubeconfig(
        &self,
        file: &Path,
        spell: impl Fn(&Path) -> String,
    ) -> Result<(), String> {
        self.write_kubeconfig(file, spell(&self.ca), &self.proxy_token, "kube-proxy")
    }

    /// Writes the NetworkPolicy agent's kubeconfig ([`AGENT_USER`]) to `file`, its CA named
    /// by `spell`.
    pub fn write_agent_kubeconfig(
        &self,
        file: &Path,
        spell: impl Fn(&Path) -> String,
    ) -> Result<(), String> {
        self.write_kubeconfig(file, spell(&self.ca), &self.agent_token, "cni-win-daemon")
    }

    fn write_kubeconfig(
        &self,
        file: &Path,
        ca: String,
        token: &str,
        user: &str,
    ) -> Result<(), String> {
        write(file, &kubeconfig(&self.server, &ca, token, user))
    }

    /// Waits until the API server has written its serving certificate and answers `/readyz`.
    fn wait_ready(&self) -> Result<(), String> {
        let deadline = Instant::now() + START_DEADLINE;
        loop {
            let etcd = lock(&self.etcd).try_wait();
            let exited = [etcd, self.api_server().try_wait()];
            if let Some(status) = exited.into_iter().find_map(|status| status.ok().flatten()) {
                return Err(format!(
                    "a control-plane process exited during start-up ({status}): see its log"
                ));
            }
            if self.ca.exists() && self.kubectl.raw("/readyz").is_ok() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "kube-apiserver not ready within {} s: see its log",
                    START_DEADLINE.as_secs()
                ));
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        self.api_server().stop();
        let mut etcd = lock(&self.etcd);
        let _ = etcd.kill();
        let _ = etcd.wait();
    }
}

/// The kube-apiserver's command line, and its process while it runs.
#[derive(Debug)]
struct ApiServer {
    program: PathBuf,
    args: Vec<String>,
    log: PathBuf,
    process: Option<Child>,
}

impl ApiServer {
    /// Starts it, its log appended to (a restart keeps the first run's lines).
    fn start(&mut self) -> Result<(), String> {
        let log = File::options()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|e| format!("{}: {e}", self.log.display()))?;
        self.process = Some(spawn(Command::new(&self.program).args(&self.args), log)?);
        Ok(())
    }

    fn stop(&mut self) {
        if let Some(mut process) = self.process.take() {
            let _ = process.kill();
            let _ = process.wait();
        }
    }

    fn try_wait(&mut self) -> std::io::Result<Option<std::process::ExitStatus>> {
        match &mut self.process {
            Some(process) => process.try_wait(),
            None => Ok(None),
        }
    }
}

/// `kubectl` with the admin's kubeconfig.
#[derive(Debug)]
pub struct Kubectl {
    program: PathBuf,
    kubeconfig: PathBuf,
}

impl Kubectl {
    fn exec(&self, args: &[&str], stdin: Option<&Value>) -> Result<Exec, String> {
        let mut all = vec!["--kubeconfig", self.kubeconfig.to_str().unwrap_or_default()];
        all.extend_from_slice(args);
        let mut invocation = Invocation::new();
        if let Some(document) = stdin {
            invocation = invocation.config(document);
        }
        execute_with_args(&Native, &self.program, &all, &invocation, KUBECTL_DEADLINE)
            .map_err(|error| format!("cannot start kubectl: {error}"))
    }

    fn run(&self, args: &[&str], stdin: Option<&Value>) -> Result<String, String> {
        let exec = self.exec(args, stdin)?;
        if exec.exit.success() {
            Ok(String::from_utf8_lossy(&exec.stdout).into_owned())
        } else {
            Err(format!(
                "`kubectl {}` ended with {}: {}",
                args.join(" "),
                exec.exit,
                String::from_utf8_lossy(&exec.stderr).trim()
            ))
        }
    }

    /// Creates or updates the objects of `document` (one object or a `List`).
    pub fn apply(&self, document: &Value) -> Result<(), String> {
        self.run(&["apply", "-f", "-"], Some(document)).map(drop)
    }

    /// Creates or updates the objects of the manifest at `file`.
    pub fn apply_file(&self, file: &Path) -> Result<(), String> {
        self.run(&["apply", "-f", file.to_str().unwrap_or_default()], None)
            .map(drop)
    }

    /// `kubectl get RESOURCE -n NAMESPACE -o json`, decoded.
    pub fn get(&self, resource: &str, namespace: &str) -> Result<Value, String> {
        let out = self.run(&["get", resource, "-n", namespace, "-o", "json"], None)?;
        serde_json::from_str(&out).map_err(|error| format!("kubectl get {resource}: {error}"))
    }

    /// Deletes one object; one that is already gone is fine.
    pub fn delete(&self, kind: &str, namespace: &str, name: &str) -> Result<(), String> {
        self.run(
            &[
                "delete",
                kind,
                name,
                "-n",
                namespace,
                "--ignore-not-found",
                "--wait=false",
            ],
            None,
        )
        .map(drop)
    }

    /// `PUT` of `document` on an API path: a pod's `status`, which no kubelet writes here.
    pub fn replace_raw(&self, api_path: &str, document: &Value) -> Result<(), String> {
        self.run(&["replace", "--raw", api_path, "-f", "-"], Some(document))
            .map(drop)
    }

    /// Deletes the objects of `kind` named `names` in `namespace` at once, as a kubelet
    /// confirms a bound pod's deletion (`--force --grace-period=0`); gone ones are fine.
    pub fn delete_now(&self, kind: &str, namespace: &str, names: &[&str]) -> Result<(), String> {
        let mut args = vec!["delete", kind, "-n", namespace];
        args.extend_from_slice(names);
        args.extend([
            "--ignore-not-found",
            "--force",
            "--grace-period=0",
            "--wait=false",
        ]);
        self.run(&args, None).map(drop)
    }

    /// `GET` on an API path, for probes.
    pub fn raw(&self, api_path: &str) -> Result<String, String> {
        self.run(&["get", "--raw", api_path], None)
    }

    /// Whether RBAC lets `user` `verb` `resource` across the cluster (`kubectl auth can-i`,
    /// which answers `no` with exit status 1).
    pub fn can(&self, user: &str, verb: &str, resource: &str) -> Result<bool, String> {
        let args = [
            "auth",
            "can-i",
            verb,
            resource,
            "--all-namespaces",
            "--as",
            user,
        ];
        let exec = self.exec(&args, None)?;
        match String::from_utf8_lossy(&exec.stdout).trim() {
            "yes" => Ok(true),
            "no" => Ok(false),
            _ => Err(format!(
                "`kubectl {}` ended with {}: {}",
                args.join(" "),
                exec.exit,
                String::from_utf8_lossy(&exec.stderr).trim()
            )),
        }
    }
}

fn kubeconfig(server: &str, ca: &str, token: &str, user: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: lane\n  cluster:\n    server: {server}\n    certificate-authority: '{ca}'\nusers:\n- name: {user}\n  user:\n    token: {token}\ncontexts:\n- name: lane\n  context:\n    cluster: lane\n    user: {user}\ncurrent-context: lane\n"
    )
}

fn spawn(command: &mut Command, out: File) -> Result<Child, String> {
    let err = out
        .try_clone()
        .map_err(|error| format!("cannot share a log file: {error}"))?;
    command
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|error| format!("cannot start {:?}: {error}", command.get_program()))
}

fn openssl(args: &[&str]) -> Result<(), String> {
    let status = Command::new("openssl")
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|error| format!("cannot run openssl: {error}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`openssl {}` failed ({status})", args.join(" ")))
    }
}

/// 128 random bits as hex, for a bearer token nobody else can guess.
fn random_token() -> Result<String, String> {
    let mut bytes = [0u8; 16];
    File::open("/dev/urandom")
        .and_then(|mut random| random.read_exact(&mut bytes))
        .map_err(|error| format!("cannot read /dev/urandom: {error}"))?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

/// A lock whose holder cannot have left its process half-handled: each holder only starts,
/// stops or polls it.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn create(file: &Path) -> Result<File, String> {
    File::create(file).map_err(|error| format!("{}: {error}", file.display()))
}

fn write(file: &Path, text: &str) -> Result<(), String> {
    std::fs::write(file, text).map_err(|error| format!("{}: {error}", file.display()))
}

fn path(file: &Path) -> String {
    file.to_string_lossy().into_owned()
}
