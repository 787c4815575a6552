//! The agent's watches of the API server, with kube-rs, on a tokio runtime of their own (one
//! thread: the daemon stays synchronous): NetworkPolicies, Namespaces and Pods of every
//! namespace, and this node's Node object, each fed to the [`Feed`] as it comes; and the
//! Events on refused policies, published from the same thread. Nothing on this thread waits
//! for the agent's state, which a pass holds while it renders: what a watch reads goes to an
//! applier of its own, a blocking task of the runtime ([`read`]), and the publisher reaches
//! the state through one too.
//!
//! A watch's errors are fed too, so the agent knows the API server is unreachable and keeps
//! the last programmed rules; a failed watch starts over with a list ([`feed_from`]). No
//! object is kept here: each event is turned into the translation's values by the feed, so
//! memory grows with what policy needs.
//!
//! No step waits without a bound: kube's client has no read timeout of its own, so a list
//! (or a watch's first answer) on a connection that died silently would wait for ever and
//! freeze its resource. Every request here gives up after [`READ_TIMEOUT`] without a byte
//! ([`client`]), and the API server ends each watch after [`WATCH_TIMEOUT`], well inside
//! it, so a quiet watch is renewed (from its resource version: no relist) before it could
//! be taken for a dead one. Lists are served from the API server's watch cache (as
//! client-go's reflector asks for them), not as quorum reads from etcd.
//!
//! This is the one part of the agent `cargo test` does not run: the tests feed the same
//! [`Feed`] with the same events, and the node lane runs this against a real API server.

use std::path::PathBuf;
use std::thread::JoinHandle;
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::{Namespace, Node, ObjectReference, Pod};
use k8s_openapi::api::events::v1::Event as ApiEvent;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::PostParams;
use kube::runtime::watcher::{self, Config, DefaultBackoff};
use kube::{Api, Client};
use tokio::sync::mpsc::UnboundedSender;

use super::feed::{Event, Feed, Refusal, Resource};
use crate::error::Error;

/// How often refusals due are published as Events while the API server takes them.
const EVENTS_EVERY: Duration = Duration::from_secs(1);

/// The longest pause between two tries of publishing Events the API server refused, or of a
/// failed watch.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The controller name Events carry.
const REPORTER: &str = "cni-win-network-policy";

/// How long the API server keeps one watch open before the agent asks for the next, from
/// where it left off. Short enough that a quiet watch ends well inside [`READ_TIMEOUT`].
const WATCH_TIMEOUT: Duration = Duration::from_secs(60);

/// The longest any request waits without receiving a byte: a list page, the start of a
/// watch, an Event. A connection that died silently is given up after this, and the watch
/// starts over.
const READ_TIMEOUT: Duration = Duration::from_secs(90);

/// The longest a connection to the API server may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest a request may take to send.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

const _: () = assert!(
    WATCH_TIMEOUT.as_secs() + 10 < READ_TIMEOUT.as_secs(),
    "the API server must end a quiet watch before the read timeout takes it for a dead one"
);

/// Which API server, and as whom.
#[derive(Debug, Clone, Default)]
pub struct ApiSettings {
    /// A kubeconfig (`--kubeconfig`); `None`: the in-cluster ServiceAccount
    /// (`KUBERNETES_SERVICE_HOST`/`_PORT` and the mounted token and CA).
    pub kubeconfig: Option<PathBuf>,
}

/// Starts the watches on a thread of their own; they stop when the agent stops. A client
/// that cannot be built (no in-cluster environment, a kubeconfig that does not load) is an
/// error now, not a retry: it is a setting to fix.
pub(super) fn spawn(
    api: ApiSettings,
    node_name: String,
    feed: Feed,
) -> Result<JoinHandle<()>, Error> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::new(format!("network policy: cannot start the watches: {e}")))?;
    let client = runtime.block_on(client(&api))?;
    let thread = std::thread::Builder::new()
        .name("netpol-watches".to_owned())
        .spawn(move || {
            runtime.block_on(watch(client, node_name, feed));
            // A request still in flight is dropped with the runtime: nothing waits for it.
            runtime.shutdown_timeout(Duration::from_secs(1));
        })
        .map_err(|e| Error::new(format!("network policy: cannot start the watches: {e}")))?;
    Ok(thread)
}

async fn client(api: &ApiSettings) -> Result<Client, Error> {
    let config = match &api.kubeconfig {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .map_err(|e| Error::new(format!("--kubeconfig {}: {e}", path.display())))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
                .await
                .map_err(|e| Error::new(format!("--kubeconfig {}: {e}", path.display())))?
        }
        None => kube::Config::incluster().map_err(|e| {
            Error::new(format!(
                "network policy: not in a cluster ({e}): pass --kubeconfig, or run in the \
                 DaemonSet, whose ServiceAccount the agent uses"
            ))
        })?,
    };
    Client::try_from(bounded(config)).map_err(|e| Error::new(format!("network policy: {e}")))
}

/// `config` with every request bounded: see [`READ_TIMEOUT`]. The read timeout counts from
/// each request's last write, not from when its pooled connection went idle.
fn bounded(mut config: kube::Config) -> kube::Config {
    config.connect_timeout = Some(CONNECT_TIMEOUT);
    config.read_timeout = Some(READ_TIMEOUT);
    config.write_timeout = Some(WRITE_TIMEOUT);
    config.reset_reader_on_write = true;
    config
}

/// The watcher settings of every watch: renewed every [`WATCH_TIMEOUT`], lists from the API
/// server's watch cache.
fn watch_config() -> Config {
    Config::default()
        .timeout(u32::try_from(WATCH_TIMEOUT.as_secs()).unwrap_or(u32::MAX))
        .any_semantic()
}

/// Runs every watch and the Event publisher until the agent stops.
async fn watch(client: Client, node_name: String, feed: Feed) {
    let node = watch_config().fields(&format!("metadata.name={node_name}"));
    let policies = feed_from(
        Api::<NetworkPolicy>::all(client.clone()),
        watch_config(),
        Resource::NetworkPolicies,
        feed.clone(),
        Feed::policies,
    );
    let namespaces = feed_from(
        Api::<Namespace>::all(client.clone()),
        watch_config(),
        Resource::Namespaces,
        feed.clone(),
        Feed::namespaces,
    );
    let pods = feed_from(
        Api::<Pod>::all(client.clone()),
        watch_config(),
        Resource::Pods,
        feed.clone(),
        Feed::pods,
    );
    let this_node = feed_from(
        Api::<Node>::all(client.clone()),
        node,
        Resource::Node,
        feed.clone(),
        Feed::node,
    );
    let events = publish_refusals(client, node_name, feed.clone());
    let stopped = until_stopped(feed);
    // Each runs until the agent stops (a watch starts over by itself): the first to end ends
    // all.
    let tasks = vec![
        policies.boxed_local(),
        namespaces.boxed_local(),
        pods.boxed_local(),
        this_node.boxed_local(),
        events.boxed_local(),
        stopped.boxed_local(),
    ];
    futures::future::select_all(tasks).await;
}

/// Feeds every event of the watch of `api` to `feed` with `apply` until the agent stops.
///
/// A watch that fails is fed as the watch's failure and starts over, after kube-runtime's
/// default backoff (0.8 s doubling to 30 s, with jitter), with a new watcher and so a new
/// list. kube-runtime's watcher would rather resume from the last resource version, and
/// without a word when it succeeds: the agent could then not tell that it is programming
/// from the API server again (`cniwin_netpol_api_up` would stay 0 until the next change).
/// The list's `InitDone` says so, and the list is the whole truth whatever the outage hid.
async fn feed_from<K>(
    api: Api<K>,
    config: Config,
    resource: Resource,
    feed: Feed,
    apply: fn(&Feed, Event<K>),
) where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    // The applier runs until `seen` is dropped with this future, when the agent stops.
    let (seen, applier) = applier(resource, feed, apply);
    let mut backoff = DefaultBackoff::default();
    loop {
        if !read(watcher::watcher(api.clone(), config.clone()), &seen).await {
            // Only a panic ends the applier while this runs: it goes on up (the agent's
            // thread ends, and says so), rather than the watch relisting for nobody.
            drop(seen);
            if let Err(error) = applier.await
                && error.is_panic()
            {
                std::panic::resume_unwind(error.into_panic());
            }
            return;
        }
        // The default backoff never runs out; it starts again from 0.8 s once 120 s passed
        // without a failure.
        let pause = backoff.next().unwrap_or(MAX_BACKOFF);
        tokio::time::sleep(pause).await;
    }
}

/// What a watch saw, in the order it saw it.
#[derive(Debug)]
enum Seen<K> {
    Event(Event<K>),
    /// The watch failed (the error's text).
    Failed(String),
}

/// Reads `stream` to its end or its first error, sending what it sees to the applier;
/// whether the applier took it all (it is gone only if it panicked).
///
/// Reading never waits for the agent's state: a pass holds it while it renders (for as long
/// as the cluster is large), and a watch that stopped reading meanwhile would stall every
/// watch of this thread and the Event publisher, and look to the API server like a slow
/// watcher, which it may close (a relist). What is read meanwhile queues for the applier,
/// which hands it over once the pass lets go, as Felix's dataplane driver takes the
/// calculation graph's updates through a channel.
async fn read<K>(
    stream: impl futures::Stream<Item = watcher::Result<Event<K>>>,
    seen: &UnboundedSender<Seen<K>>,
) -> bool {
    let mut stream = std::pin::pin!(stream);
    while let Some(item) = stream.next().await {
        let (item, failed) = match item {
            Ok(event) => (Seen::Event(event), false),
            Err(error) => (Seen::Failed(error.to_string()), true),
        };
        if seen.send(item).is_err() {
            return false;
        }
        if failed {
            break;
        }
    }
    true
}

/// Starts the thread that hands what a watch of `resource` saw to `feed` with `apply`, in
/// order, waiting for the state as long as a pass holds it; it ends when the sender it
/// returns is dropped.
fn applier<K: Send + 'static>(
    resource: Resource,
    feed: Feed,
    apply: fn(&Feed, Event<K>),
) -> (UnboundedSender<Seen<K>>, tokio::task::JoinHandle<()>) {
    let (sender, mut seen) = tokio::sync::mpsc::unbounded_channel();
    let applier = tokio::task::spawn_blocking(move || {
        while let Some(item) = seen.blocking_recv() {
            match item {
                Seen::Event(event) => apply(&feed, event),
                Seen::Failed(error) => feed.failed(resource, error),
            }
        }
    });
    (sender, applier)
}

/// Publishes each refusal due as a Warning Event on its policy, once in the cluster: the
/// Event's name is the same on every node ([`Refusal::event_name`]), so the first agent to
/// create it tells it and every other finds it there. A refusal stays due until its Event is
/// in the API server (or its policy is fixed or gone): one the API server did not take (it
/// is unreachable, or still refusing the agent while its authoriser loads) is tried again,
/// after a pause doubling from [`EVENTS_EVERY`] to [`MAX_BACKOFF`].
async fn publish_refusals(client: Client, node_name: String, feed: Feed) {
    let mut pause = EVENTS_EVERY;
    loop {
        tokio::time::sleep(pause).await;
        let mut failed = false;
        let Some(due) = with_state(&feed, Feed::refusals_due).await else {
            return;
        };
        for refusal in due {
            let events = Api::<ApiEvent>::namespaced(client.clone(), &refusal.policy.namespace);
            let told = match events
                .create(&PostParams::default(), &event(&refusal, &node_name))
                .await
            {
                Ok(_) => true,
                // Another node's agent told it, or this one before a restart.
                Err(kube::Error::Api(status)) if status.is_already_exists() => true,
                Err(e) => {
                    log::warn!(
                        "network policy: cannot publish the Event on {}/{} yet (tried again): {e}",
                        refusal.policy.namespace,
                        refusal.policy.name
                    );
                    false
                }
            };
            failed |= !told;
            if told {
                with_state(&feed, move |feed| feed.told(&refusal)).await;
            }
        }
        pause = if failed {
            (pause * 2).min(MAX_BACKOFF)
        } else {
            EVENTS_EVERY
        };
    }
}

/// Runs `f`, which waits for the agent's state, off this thread: a pass holds the state while
/// it renders, and the watches on this thread read on meanwhile. `None` once the agent is
/// stopping (the runtime shuts down before `f` ran).
async fn with_state<T: Send + 'static>(
    feed: &Feed,
    f: impl FnOnce(&Feed) -> T + Send + 'static,
) -> Option<T> {
    let feed = feed.clone();
    match tokio::task::spawn_blocking(move || f(&feed)).await {
        Ok(value) => Some(value),
        Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
        Err(_) => None,
    }
}

/// The `events.k8s.io/v1` Event telling `refusal`, as reported from `node_name`.
fn event(refusal: &Refusal, node_name: &str) -> ApiEvent {
    ApiEvent {
        metadata: ObjectMeta {
            name: Some(refusal.event_name()),
            namespace: Some(refusal.policy.namespace.clone()),
            ..ObjectMeta::default()
        },
        event_time: Some(MicroTime(Timestamp::now())),
        type_: Some("Warning".to_owned()),
        reason: Some("PolicyRefused".to_owned()),
        action: Some("Enforce".to_owned()),
        note: Some(truncated(&refusal.reason, 1000)),
        regarding: Some(ObjectReference {
            api_version: Some("networking.k8s.io/v1".to_owned()),
            kind: Some("NetworkPolicy".to_owned()),
            namespace: Some(refusal.policy.namespace.clone()),
            name: Some(refusal.policy.name.clone()),
            uid: refusal.uid.clone(),
            ..ObjectReference::default()
        }),
        reporting_controller: Some(REPORTER.to_owned()),
        reporting_instance: Some(truncated(node_name, 128)),
        ..ApiEvent::default()
    }
}

/// Returns once the agent is stopping.
async fn until_stopped(feed: Feed) {
    let mut every = tokio::time::interval(crate::shutdown::POLL);
    while !feed.shared.stopping() {
        every.tick().await;
    }
}

/// `text` cut to at most `max` bytes on a character boundary (an Event's note is at most
/// 1 kB).
fn truncated(text: &str, max: usize) -> String {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// kube's client waits for ever for an answer unless told otherwise: every request the
    /// agent makes is bounded, and every watch is renewed well inside that bound.
    #[test]
    fn every_request_is_bounded_and_every_watch_renewed_inside_the_bound() {
        let config = bounded(kube::Config::new("https://10.0.0.1:6443".parse().unwrap()));
        assert_eq!(config.connect_timeout, Some(CONNECT_TIMEOUT));
        assert_eq!(config.read_timeout, Some(READ_TIMEOUT));
        assert_eq!(config.write_timeout, Some(WRITE_TIMEOUT));
        assert!(config.reset_reader_on_write, "counted from each request");
        let watch = watch_config();
        assert_eq!(watch.timeout.map(u64::from), Some(WATCH_TIMEOUT.as_secs()));
        assert_eq!(watch.list_semantic, watcher::ListSemantic::Any);
    }

    /// A pass holds the agent's state while it renders. The watches read on meanwhile (the
    /// API server sees no slow watcher, and the other watches on this thread are not held
    /// up), and what they read is in the state, in order, once the pass lets go.
    #[test]
    fn a_watch_reads_on_while_a_pass_holds_the_state() {
        use std::sync::mpsc;

        use super::super::{Agent, Settings};
        use crate::shutdown::Shutdown;

        let agent = Agent::start(
            Settings {
                node_name: "node-1".to_owned(),
                snapshot_max_age: Duration::from_secs(300),
            },
            &Shutdown::new(),
        );
        let names: Vec<String> = (0..50).map(|i| format!("ns-{i}")).collect();
        let mut events = vec![Event::Init];
        events.extend(names.iter().map(|name| {
            Event::InitApply(Namespace {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    ..ObjectMeta::default()
                },
                ..Namespace::default()
            })
        }));
        events.push(Event::InitDone);
        let count = events.len();
        let (reads, was_read) = mpsc::channel();
        // Each event comes after a wait, as from the network: the thread runs other tasks
        // between them.
        let stream = futures::stream::iter(events.into_iter().map(Ok))
            .then(|event| async {
                tokio::task::yield_now().await;
                event
            })
            .inspect(move |_| reads.send(()).expect("the test waits"));

        let rendering = agent.shared.lock_state();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let feed = agent.feed();
        let reader = std::thread::spawn(move || {
            runtime.block_on(async {
                let (seen, applier) = applier(Resource::Namespaces, feed, Feed::namespaces);
                assert!(read(stream, &seen).await, "the applier took it all");
                drop(seen);
                applier.await.expect("the applier does not panic");
            });
        });
        for i in 0..count {
            was_read
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("event {i} of {count} not read while a pass renders"));
        }
        assert_eq!(
            rendering.feed.cluster.namespaces().count(),
            0,
            "nothing handed yet"
        );
        drop(rendering);

        reader.join().expect("the reader does not panic");
        let state = agent.shared.lock_state();
        let known: Vec<&str> = state.feed.cluster.namespaces().collect();
        let mut expected: Vec<&str> = names.iter().map(String::as_str).collect();
        expected.sort_unstable();
        assert_eq!(known, expected, "every namespace, once the pass let go");
        assert!(state.feed.api().up, "the watch's last word was an event");
    }
}
