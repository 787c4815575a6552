//! The benchmark's own client of the API server (the admin's): thousands of objects in tens of
//! seconds, a few requests in flight at once, where `kubectl` would start a process for each
//! status write.

use std::path::Path;

use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod, ServiceAccount};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::{Value, json};
use tokio::runtime::Runtime;

/// Requests in flight at once: enough to keep the API server busy on 2 cores.
const IN_FLIGHT: usize = 16;

/// A client of the API server, on a runtime of its own.
pub struct Cluster {
    runtime: Runtime,
    client: Client,
}

impl Cluster {
    pub fn connect(kubeconfig: &Path) -> Result<Cluster, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|error| format!("tokio: {error}"))?;
        let client = runtime.block_on(async {
            let kubeconfig = kube::config::Kubeconfig::read_from(kubeconfig)
                .map_err(|error| format!("{}: {error}", kubeconfig.display()))?;
            let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
                .await
                .map_err(|error| format!("kubeconfig: {error}"))?;
            Client::try_from(config).map_err(|error| format!("client: {error}"))
        })?;
        Ok(Cluster { runtime, client })
    }

    /// Creates the Node object the agent reads its addresses from.
    pub fn create_node(&self, name: &str, address: &str) -> Result<(), String> {
        let node = decode(json!({"metadata": {"name": name}, "status": {"addresses": [
            {"type": "InternalIP", "address": address}, {"type": "Hostname", "address": name}]}}))?;
        let api = Api::<Node>::all(self.client.clone());
        self.runtime.block_on(async {
            let created = api.create(&PostParams::default(), &node).await;
            created.map_err(|error| format!("node {name}: {error}"))?;
            // Addresses are status: the create drops them.
            let status = json!({"status": node.status});
            api.patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
                .await
                .map(drop)
                .map_err(|error| format!("node {name} status: {error}"))
        })
    }

    /// Creates each namespace and its `default` ServiceAccount (no controller-manager makes
    /// it here, and pods need it).
    pub fn create_namespaces(&self, namespaces: &[Value]) -> Result<(), String> {
        let api = Api::<Namespace>::all(self.client.clone());
        self.runtime.block_on(async {
            for namespace in namespaces {
                let namespace: Namespace = decode(namespace.clone())?;
                let name = namespace.metadata.name.clone().unwrap_or_default();
                api.create(&PostParams::default(), &namespace)
                    .await
                    .map_err(|error| format!("namespace {name}: {error}"))?;
                let account = decode(json!({"metadata": {"name": "default"}}))?;
                Api::<ServiceAccount>::namespaced(self.client.clone(), &name)
                    .create(&PostParams::default(), &account)
                    .await
                    .map_err(|error| format!("{name}/default ServiceAccount: {error}"))?;
            }
            Ok(())
        })
    }

    /// Creates the pods, then writes each one's status (its address) as kubelet would.
    pub fn create_pods(&self, pods: &[(Value, Value)]) -> Result<(), String> {
        self.runtime.block_on(
            futures::stream::iter(pods.iter().map(|(pod, status)| self.add_pod(pod, status)))
                .buffer_unordered(IN_FLIGHT)
                .try_collect::<()>(),
        )
    }

    /// Creates the policies.
    pub fn create_policies(&self, policies: &[Value]) -> Result<(), String> {
        self.runtime.block_on(
            futures::stream::iter(policies.iter().map(|policy| self.add_policy(policy)))
                .buffer_unordered(IN_FLIGHT)
                .try_collect::<()>(),
        )
    }

    /// Creates one pod bound to its node, with no address yet.
    pub fn create_pod(&self, pod: &Value) -> Result<(), String> {
        let pod: Pod = decode(pod.clone())?;
        let api = self.pods(&pod);
        self.runtime.block_on(async {
            api.create(&PostParams::default(), &pod)
                .await
                .map(drop)
                .map_err(|error| format!("pod {:?}: {error}", pod.metadata.name))
        })
    }

    /// Writes a pod's status, as kubelet does.
    pub fn set_pod_status(
        &self,
        namespace: &str,
        name: &str,
        status: &Value,
    ) -> Result<(), String> {
        let api = Api::<Pod>::namespaced(self.client.clone(), namespace);
        self.runtime.block_on(async {
            api.patch_status(name, &PatchParams::default(), &Patch::Merge(status))
                .await
                .map(drop)
                .map_err(|error| format!("pod {namespace}/{name} status: {error}"))
        })
    }

    /// Sets (`Some`) or removes (`None`) a pod's label, as `kubectl label` does.
    pub fn label_pod(
        &self,
        namespace: &str,
        name: &str,
        key: &str,
        value: Option<&str>,
    ) -> Result<(), String> {
        let api = Api::<Pod>::namespaced(self.client.clone(), namespace);
        let patch = json!({"metadata": {"labels": {key: value}}});
        self.runtime.block_on(async {
            api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map(drop)
                .map_err(|error| format!("pod {namespace}/{name} labels: {error}"))
        })
    }

    /// Creates one policy.
    pub fn create_policy(&self, policy: &Value) -> Result<(), String> {
        self.runtime.block_on(self.add_policy(policy))
    }

    /// Deletes a policy.
    pub fn delete_policy(&self, namespace: &str, name: &str) -> Result<(), String> {
        let api = Api::<NetworkPolicy>::namespaced(self.client.clone(), namespace);
        self.runtime.block_on(async {
            api.delete(name, &DeleteParams::default())
                .await
                .map(drop)
                .map_err(|error| format!("policy {namespace}/{name}: {error}"))
        })
    }

    /// Deletes a pod at once: no kubelet runs to end a graceful deletion.
    pub fn delete_pod(&self, namespace: &str, name: &str) -> Result<(), String> {
        let api = Api::<Pod>::namespaced(self.client.clone(), namespace);
        let now = DeleteParams {
            grace_period_seconds: Some(0),
            ..DeleteParams::default()
        };
        self.runtime.block_on(async {
            api.delete(name, &now)
                .await
                .map(drop)
                .map_err(|error| format!("pod {namespace}/{name}: {error}"))
        })
    }

    async fn add_pod(&self, pod: &Value, status: &Value) -> Result<(), String> {
        let pod: Pod = decode(pod.clone())?;
        let name = pod.metadata.name.clone().unwrap_or_default();
        let api = self.pods(&pod);
        api.create(&PostParams::default(), &pod)
            .await
            .map_err(|error| format!("pod {name}: {error}"))?;
        api.patch_status(&name, &PatchParams::default(), &Patch::Merge(status))
            .await
            .map(drop)
            .map_err(|error| format!("pod {name} status: {error}"))
    }

    async fn add_policy(&self, policy: &Value) -> Result<(), String> {
        let policy: NetworkPolicy = decode(policy.clone())?;
        let namespace = policy.metadata.namespace.clone().unwrap_or_default();
        Api::<NetworkPolicy>::namespaced(self.client.clone(), &namespace)
            .create(&PostParams::default(), &policy)
            .await
            .map(drop)
            .map_err(|error| format!("policy {:?}: {error}", policy.metadata.name))
    }

    fn pods(&self, pod: &Pod) -> Api<Pod> {
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
        Api::namespaced(self.client.clone(), namespace)
    }
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster").finish_non_exhaustive()
    }
}

fn decode<T: serde::de::DeserializeOwned>(object: Value) -> Result<T, String> {
    serde_json::from_value(object).map_err(|error| format!("benchmark object: {error}"))
}
