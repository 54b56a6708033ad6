//! The Pod double: the replicas of a Deployment, read back from the API server, run as local
//! processes of the image's binary (`target/<profile>/mcs-policy`, the image's entrypoint), as
//! the kubelet would run their container:
//!
//! - the container's `args` (`command`, when set, must name `mcs-policy`), `$(VAR)` references
//!   expanded from its env as the kubelet expands them;
//! - its `env`: plain values, the downward API's `fieldRef` (`metadata.namespace`,
//!   `metadata.name`, `spec.serviceAccountName`, `status.podIP`), `secretKeyRef`; plus
//!   `KUBERNETES_SERVICE_HOST`/`_PORT` (the API server's own address, not the `kubernetes`
//!   Service's ClusterIP);
//! - its volumes: a Secret volume is the Secret's data (or its `items`) written to a temp dir, an
//!   emptyDir an empty temp dir. There is no chroot, so every arg and env value that starts with
//!   a volumeMount's mountPath gets that dir instead of the mountPath;
//! - the ServiceAccount token, when the pod spec automounts it: a token of the pod's
//!   ServiceAccount from the TokenRequest API, with the API server's CA and the namespace, put
//!   where kube's in-cluster configuration reads them (/var/run/secrets/kubernetes.io/
//!   serviceaccount) in a mount namespace of the process's own (`unshare`, util-linux). So the
//!   process acts with exactly the chart's RBAC;
//! - each replica listens on its own loopback address, 127.0.`100 + index`.`10 + replica`,
//!   on the container port: `--listen ADDRESS` is appended (the last value of a flag wins).
//!
//! Not modelled: no Pod object exists (the token is not bound to one), probes other than
//! readiness (the kube-proxy double runs that), resources, security contexts, restarts by
//! themselves (a test restarts a replica with [`Workload::start`]).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use serde_json::Value;

use super::ControlPlane;
use super::process::Process;
use super::proxy::{Endpoints, Probe, ServiceProxy};

/// Mounts the ServiceAccount files of `$SA_DIR` where a Pod has them, then runs `$0 "$@"`.
const IN_POD: &str = r#"set -e
mount -t tmpfs tmpfs /var/run
mkdir -p /var/run/secrets/kubernetes.io/serviceaccount
cp "$SA_DIR/token" "$SA_DIR/ca.crt" "$SA_DIR/namespace" /var/run/secrets/kubernetes.io/serviceaccount/
exec "$0" "$@""#;

/// The replicas of one Deployment.
pub struct Workload<'a> {
    plane: &'a ControlPlane,
    pub namespace: String,
    pub name: String,
    /// The Deployment's pod template, as last read.
    template: Value,
    dir: PathBuf,
    replicas: Vec<Option<Process>>,
    endpoints: Endpoints,
    starts: usize,
}

impl<'a> Workload<'a> {
    /// The Deployment `name` of `namespace` as the API server holds it; no replica runs yet.
    pub fn deployment(plane: &'a ControlPlane, namespace: &str, name: &str) -> Workload<'a> {
        let dir = plane.dir.join(format!("pods-{namespace}-{name}"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut workload = Workload {
            plane,
            namespace: namespace.to_string(),
            name: name.to_string(),
            template: Value::Null,
            dir,
            replicas: Vec::new(),
            endpoints: Arc::new(Mutex::new(Vec::new())),
            starts: 0,
        };
        assert!(
            workload.read(),
            "Deployment {namespace}/{name} does not exist"
        );
        workload
    }

    /// Reads the Deployment again; false when it is gone.
    fn read(&mut self) -> bool {
        let Some(deployment) = self.plane.get("deployment", &self.namespace, &self.name) else {
            return false;
        };
        let template = deployment["spec"]["template"].clone();
        let containers = template["spec"]["containers"].as_array().unwrap();
        assert_eq!(
            containers.len(),
            1,
            "the Pod double runs one container per pod"
        );
        assert!(
            template["spec"]["initContainers"].is_null(),
            "the Pod double runs no init containers"
        );
        self.template = template;
        let replicas = deployment["spec"]["replicas"].as_u64().unwrap_or(1) as usize;
        while self.replicas.len() < replicas {
            self.replicas.push(None);
        }
        true
    }

    fn container(&self) -> &Value {
        &self.template["spec"]["containers"][0]
    }

    /// The Deployment's replica count, as last read.
    pub fn replica_count(&self) -> usize {
        self.replicas.len()
    }

    /// The port the container listens on: its first `ports[].containerPort`.
    fn container_port(&self) -> u16 {
        self.container()["ports"][0]["containerPort"]
            .as_u64()
            .expect("the container declares its port") as u16
    }

    /// Where replica `i` listens.
    pub fn address(&self, i: usize) -> SocketAddr {
        format!(
            "127.0.{}.{}:{}",
            100 + u16::from(self.plane.index),
            10 + i,
            self.container_port()
        )
        .parse()
        .unwrap()
    }

    /// Starts every replica the Deployment asks for.
    pub fn start_all(&mut self) {
        for i in 0..self.replicas.len() {
            self.start(i);
        }
    }

    /// Starts replica `i` (a new pod: new volumes, a new token), stopping it first if it runs.
    pub fn start(&mut self, i: usize) {
        self.stop(i);
        while self.replicas.len() <= i {
            self.replicas.push(None);
        }
        self.starts += 1;
        let pod_name = format!("{}-{}-{i}", self.name, self.starts);
        let dir = self.dir.join(&pod_name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let address = self.address(i);
        let pod = &self.template["spec"];
        let container = self.container().clone();

        // Volumes and mounts (longest mountPath first, so the most specific one rewrites).
        let mut volumes = std::collections::BTreeMap::new();
        for volume in pod["volumes"].as_array().into_iter().flatten() {
            let name = volume["name"].as_str().unwrap();
            let host = dir.join("volumes").join(name);
            std::fs::create_dir_all(&host).unwrap();
            if let Some(secret) = volume.get("secret") {
                self.write_secret(secret, &host);
            } else {
                assert!(
                    volume.get("emptyDir").is_some(),
                    "the Pod double makes Secret and emptyDir volumes only, not {volume}"
                );
            }
            volumes.insert(name.to_string(), host);
        }
        let mut mounts: Vec<(String, PathBuf)> = container["volumeMounts"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| {
                assert!(m["subPath"].is_null(), "subPath mounts are not modelled");
                let volume = m["name"].as_str().unwrap();
                let host = volumes
                    .get(volume)
                    .unwrap_or_else(|| panic!("volumeMount of unknown volume {volume}"));
                (m["mountPath"].as_str().unwrap().to_string(), host.clone())
            })
            .collect();
        mounts.sort_by_key(|(path, _)| std::cmp::Reverse(path.len()));
        let rewrite = |value: String| -> String {
            for (mount, host) in &mounts {
                if let Some(rest) = value.strip_prefix(mount.as_str())
                    && (rest.is_empty() || rest.starts_with('/'))
                {
                    return format!("{}{rest}", host.display());
                }
            }
            value
        };

        // Env, in order, each value able to refer to those before it.
        let service_account = pod["serviceAccountName"].as_str().unwrap_or("default");
        let mut env: Vec<(String, String)> = vec![
            ("KUBERNETES_SERVICE_HOST".into(), "127.0.0.1".into()),
            (
                "KUBERNETES_SERVICE_PORT".into(),
                self.plane.port.to_string(),
            ),
        ];
        for var in container["env"].as_array().into_iter().flatten() {
            let name = var["name"].as_str().unwrap().to_string();
            let value = if let Some(value) = var["value"].as_str() {
                expand(value, &env)
            } else if let Some(field) = var["valueFrom"]["fieldRef"]["fieldPath"].as_str() {
                match field {
                    "metadata.namespace" => self.namespace.clone(),
                    "metadata.name" => pod_name.clone(),
                    "spec.serviceAccountName" => service_account.to_string(),
                    "status.podIP" => address.ip().to_string(),
                    other => panic!("the Pod double does not resolve fieldRef {other}"),
                }
            } else if let Some(key) = var["valueFrom"].get("secretKeyRef") {
                let secret = self
                    .plane
                    .get("secret", &self.namespace, key["name"].as_str().unwrap())
                    .expect("the secretKeyRef's Secret exists");
                decode(&secret["data"][key["key"].as_str().unwrap()])
            } else {
                panic!("the Pod double does not resolve env {var}")
            };
            env.retain(|(n, _)| *n != name);
            env.push((name, value));
        }
        let env: Vec<(String, String)> = env.into_iter().map(|(n, v)| (n, rewrite(v))).collect();

        // Args: the image's entrypoint is `mcs-policy`; `command` may only name it again.
        let mut args: Vec<String> = Vec::new();
        if let Some(command) = container["command"].as_array() {
            let first = command[0].as_str().unwrap();
            assert!(
                first.rsplit('/').next() == Some("mcs-policy"),
                "the Pod double runs the image's mcs-policy, not {first}"
            );
            args.extend(command[1..].iter().map(|a| a.as_str().unwrap().to_string()));
        }
        args.extend(
            container["args"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|a| a.as_str().unwrap().to_string()),
        );
        let mut args: Vec<String> = args
            .into_iter()
            .map(|a| rewrite(expand(&a, &env)))
            .collect();
        set_listen(&mut args, &address.to_string());

        let binary = crate::binary("mcs-policy");
        let automount = pod["automountServiceAccountToken"]
            .as_bool()
            .unwrap_or(true);
        let log = dir.join("container.log");
        let process = if automount {
            let account = ServiceAccount {
                plane: self.plane,
                namespace: &self.namespace,
                name: service_account,
            };
            start_with_token(&account, &pod_name, &dir, &args, env, &log)
        } else {
            Process::start(&pod_name, &binary, &args, &env, &log)
        };
        self.replicas[i] = Some(process);
        self.endpoints.lock().unwrap().push(address);
    }

    fn write_secret(&self, volume: &Value, dir: &Path) {
        let name = volume["secretName"].as_str().unwrap();
        let Some(secret) = self.plane.get("secret", &self.namespace, name) else {
            assert!(
                volume["optional"].as_bool() == Some(true),
                "the Secret {}/{name} of a volume does not exist: the kubelet would not start the \
                 pod",
                self.namespace
            );
            return;
        };
        let data = secret["data"].as_object().cloned().unwrap_or_default();
        let items: Vec<(String, String)> = match volume["items"].as_array() {
            Some(items) => items
                .iter()
                .map(|i| {
                    (
                        i["key"].as_str().unwrap().to_string(),
                        i["path"].as_str().unwrap().to_string(),
                    )
                })
                .collect(),
            None => data.keys().map(|k| (k.clone(), k.clone())).collect(),
        };
        for (key, path) in items {
            let file = dir.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, decode(&data[&key])).unwrap();
        }
    }

    /// Stops replica `i` (SIGKILL); its address leaves the endpoints at once.
    pub fn stop(&mut self, i: usize) {
        let address = self.address(i);
        self.endpoints.lock().unwrap().retain(|a| *a != address);
        if let Some(slot) = self.replicas.get_mut(i) {
            drop(slot.take());
        }
    }

    /// Stops every replica.
    pub fn stop_all(&mut self) {
        for i in 0..self.replicas.len() {
            self.stop(i);
        }
    }

    /// What a rollout does after the Deployment changed: reads it again and replaces each
    /// replica in turn by one of the new template, waiting until it is ready before the next
    /// (maxUnavailable 1 of 2: the other keeps serving); stops them all when it is gone.
    pub fn roll_out(&mut self) {
        if !self.read() {
            self.stop_all();
            self.replicas.clear();
            return;
        }
        for i in 0..self.replicas.len() {
            self.start(i);
            self.wait_ready(i);
        }
    }

    /// Waits (60 s at most) until replica `i` answers its readiness probe.
    pub fn wait_ready(&mut self, i: usize) {
        let probe = self.probe();
        let address = self.address(i);
        let client = reqwest::Client::builder()
            .use_rustls_tls()
            .danger_accept_invalid_certs(true)
            .timeout(Duration::from_secs(2))
            .build()
            .unwrap();
        let scheme = if probe.https { "https" } else { "http" };
        let url = format!("{scheme}://{address}{}", probe.path);
        let start = std::time::Instant::now();
        loop {
            let ready = super::block_on(async {
                client
                    .get(&url)
                    .send()
                    .await
                    .is_ok_and(|r| r.status().is_success())
            });
            if ready {
                return;
            }
            let process = self.replicas[i].as_mut().expect("replica started");
            if !process.running() || start.elapsed() > Duration::from_secs(60) {
                panic!(
                    "replica {i} of {}/{} is not ready at {url}{}:\n{}",
                    self.namespace,
                    self.name,
                    if process.running() {
                        ""
                    } else {
                        " (it exited)"
                    },
                    process.log_tail(30)
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The tails of every running replica's log.
    pub fn logs(&self) -> String {
        self.replicas
            .iter()
            .flatten()
            .map(|p| p.log_tail(30))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The container's readiness probe (`httpGet`).
    fn probe(&self) -> Probe {
        let get = &self.container()["readinessProbe"]["httpGet"];
        Probe {
            path: get["path"].as_str().unwrap_or("/").to_string(),
            https: get["scheme"].as_str() == Some("HTTPS"),
        }
    }

    /// The kube-proxy double for Service `name` of this namespace, whose selector must pick
    /// this Deployment's pods and whose targetPort must be the container's port.
    pub fn service(&self, name: &str) -> ServiceProxy {
        let service = selecting_service(self.plane, &self.namespace, name, &self.template);
        let port = &service["spec"]["ports"][0];
        let target = &port["targetPort"];
        let container_ports = self.container()["ports"].as_array().unwrap();
        let resolved = container_ports.iter().find(|p| match target {
            Value::String(named) => p["name"] == *named,
            number => p["containerPort"] == *number,
        });
        assert_eq!(
            resolved.map(|p| p["containerPort"].as_u64().unwrap() as u16),
            Some(self.container_port()),
            "the Service's targetPort {target} is the container's port"
        );
        let address: SocketAddr = format!(
            "{}:{}",
            service["spec"]["clusterIP"].as_str().unwrap(),
            port["port"]
        )
        .parse()
        .unwrap();
        ServiceProxy::start(address, self.endpoints.clone(), self.probe())
    }
}

impl Drop for Workload<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("{}", self.logs());
        }
    }
}

/// `$(NAME)` replaced by the value of an env var defined before (the kubelet's expansion;
/// `$$` escapes, unknown references stay as written).
fn expand(value: &str, env: &[(String, String)]) -> String {
    let mut out = String::new();
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(inner) = after.strip_prefix('(')
            && let Some(end) = inner.find(')')
            && let Some((_, v)) = env.iter().find(|(n, _)| *n == inner[..end])
        {
            out.push_str(v);
            rest = &inner[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// Sets `--listen` to `address` by appending the flag: `mcs-policy` takes the last value of a
/// flag given twice, so the chart's own `--listen` stays in the command line as it wrote it.
fn set_listen(args: &mut Vec<String>, address: &str) {
    args.push("--listen".into());
    args.push(address.to_string());
}

fn decode(value: &Value) -> String {
    String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(value.as_str().unwrap_or_default())
            .unwrap(),
    )
    .unwrap()
}

/// A pod's ServiceAccount, whose token a replica reads the API with.
pub(crate) struct ServiceAccount<'a> {
    pub plane: &'a ControlPlane,
    pub namespace: &'a str,
    pub name: &'a str,
}

/// Starts `mcs-policy ARGS` as replica `pod_name` with the ServiceAccount's token, CA and
/// namespace where kube's in-cluster configuration reads them (written under `dir`, mounted in
/// a mount namespace of the process's own, as the kubelet mounts them).
pub(crate) fn start_with_token(
    account: &ServiceAccount<'_>,
    pod_name: &str,
    dir: &Path,
    args: &[String],
    mut env: Vec<(String, String)>,
    log: &Path,
) -> Process {
    let sa = dir.join("serviceaccount");
    std::fs::create_dir_all(&sa).unwrap();
    let token = account.plane.token(account.namespace, account.name);
    std::fs::write(sa.join("token"), token).unwrap();
    std::fs::write(sa.join("ca.crt"), &account.plane.ca_pem).unwrap();
    std::fs::write(sa.join("namespace"), account.namespace).unwrap();
    env.push(("SA_DIR".into(), sa.display().to_string()));
    let mut full: Vec<String> = ["--user", "--map-root-user", "--mount", "sh", "-c", IN_POD]
        .map(String::from)
        .to_vec();
    full.push(crate::binary("mcs-policy").display().to_string());
    full.extend(args.iter().cloned());
    Process::start(pod_name, Path::new(&which("unshare")), &full, &env, log)
}

/// Service `name` of `namespace`, asserted to select the pods of `template`.
pub(crate) fn selecting_service(
    plane: &ControlPlane,
    namespace: &str,
    name: &str,
    template: &Value,
) -> Value {
    let service = plane
        .get("service", namespace, name)
        .unwrap_or_else(|| panic!("Service {namespace}/{name} exists"));
    let labels = &template["metadata"]["labels"];
    let selector = service["spec"]["selector"].as_object().unwrap();
    assert!(
        !selector.is_empty() && selector.iter().all(|(k, v)| labels[k] == *v),
        "the Service's selector {selector:?} does not pick the pods (labels {labels})"
    );
    service
}

fn which(name: &str) -> String {
    for dir in ["/usr/bin", "/bin", "/usr/sbin", "/sbin"] {
        let path = format!("{dir}/{name}");
        if Path::new(&path).is_file() {
            return path;
        }
    }
    panic!("{name} (util-linux) is missing: the Pod double needs it for the ServiceAccount mount")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_as_the_kubelet() {
        let env = vec![("NS".to_string(), "x".to_string())];
        assert_eq!(expand("a$(NS)b", &env), "axb");
        assert_eq!(expand("$$(NS)", &env), "$(NS)");
        assert_eq!(expand("$(OTHER)", &env), "$(OTHER)");
    }

    #[test]
    fn listen_is_appended() {
        let mut a = vec!["serve".into(), "--listen".into(), ":8443".into()];
        set_listen(&mut a, "127.0.0.2:8443");
        assert_eq!(
            a,
            ["serve", "--listen", ":8443", "--listen", "127.0.0.2:8443"]
        );
    }
}
