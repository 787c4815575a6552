//! Which pods each group the policies' rules name is made of, kept as the cluster changes.
//!
//! Finding a group's members means matching its selectors against every pod it may hold.
//! Done for every group on every pass, that was what a pass cost: at 25,000 pods a new
//! policy took over a second, whatever it touched. The [`Cluster`](crate::Cluster) keeps
//! here the members of every group its policies name instead, so a change costs what it
//! touches, as a calculation graph would have it: a pod is matched against the groups that
//! may hold it, a namespace's pods against the groups that select namespaces by label, a new
//! group against the pods it may hold, once; a pass then matches nothing.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::IpAddr;

use ipnetwork::IpNetwork;

use crate::cluster::{PodInfo, PodKey};
use crate::policy::{Namespaces, PodPeer};
use crate::selector::Labels;

/// Which pods a group is made of.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Members {
    /// The pods a pod peer's selectors select.
    Selected(PodPeer),
    /// The pods whose addresses lie in an `ipBlock`'s prefixes: an egress rule's named port
    /// resolves on them.
    InBlock(Vec<IpNetwork>),
}

impl Members {
    /// The one namespace whose pods it may hold, if it names one: a pod peer without a
    /// `namespaceSelector` looks in its policy's namespace only.
    pub(crate) fn namespace(&self) -> Option<&str> {
        match self {
            Members::Selected(PodPeer {
                namespaces: Namespaces::Named(namespace),
                ..
            }) => Some(namespace),
            _ => None,
        }
    }

    /// Whether which pods it holds turns on their namespaces' labels.
    fn reads_namespace_labels(&self) -> bool {
        matches!(
            self,
            Members::Selected(PodPeer {
                namespaces: Namespaces::Matching(_),
                ..
            })
        )
    }

    /// Whether `pod`, of a namespace with `namespace_labels` (`None`: a namespace the agent
    /// has not seen, which matches no selector), is one of its members.
    pub(crate) fn holds(&self, namespace_labels: Option<&Labels>, pod: &PodInfo) -> bool {
        #[cfg(test)]
        MEMBER_MATCHES.with(|count| count.set(count.get() + 1));
        match self {
            Members::Selected(peer) => {
                let namespace_matches = match &peer.namespaces {
                    Namespaces::Named(namespace) => &pod.key.namespace == namespace,
                    Namespaces::Matching(selector) => {
                        namespace_labels.is_some_and(|labels| selector.matches(labels))
                    }
                };
                namespace_matches && peer.pods.matches(&pod.labels)
            }
            Members::InBlock(prefixes) => pod
                .ips
                .iter()
                .any(|ip| prefixes.iter().any(|prefix| prefix.contains(*ip))),
        }
    }
}

#[cfg(test)]
thread_local! {
    /// How many times this thread matched a pod against a group: what keeping members costs.
    pub(crate) static MEMBER_MATCHES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A group's member pods and their addresses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct MemberSet {
    pods: BTreeSet<PodKey>,
    /// Each member's address, with how many members hold it (a recycled address may be two
    /// pods' for a moment): it leaves the group with the last of them.
    addresses: BTreeMap<IpAddr, usize>,
}

impl MemberSet {
    /// The members, in key order.
    pub(crate) fn pods(&self) -> impl Iterator<Item = &PodKey> {
        self.pods.iter()
    }

    /// The members' addresses, sorted, each once.
    pub(crate) fn addresses(&self) -> impl Iterator<Item = IpAddr> + '_ {
        self.addresses.keys().copied()
    }

    pub(crate) fn insert(&mut self, pod: &PodInfo) {
        if self.pods.insert(pod.key.clone()) {
            for ip in &pod.ips {
                *self.addresses.entry(*ip).or_default() += 1;
            }
        }
    }

    /// Takes `pod` out, as it was when it was put in.
    fn remove(&mut self, pod: &PodInfo) {
        if !self.pods.remove(&pod.key) {
            return;
        }
        for ip in &pod.ips {
            if let Some(holders) = self.addresses.get_mut(ip) {
                *holders -= 1;
                if *holders == 0 {
                    self.addresses.remove(ip);
                }
            }
        }
    }

    /// Puts `pod` in as it is now, or takes it out: `old` is how it was put in, if it was.
    fn update(&mut self, members: &Members, old: Option<&PodInfo>, new: Option<Held<'_>>) {
        if let Some(old) = old {
            self.remove(old);
        }
        if let Some(new) = new
            && members.holds(new.namespace_labels, new.pod)
        {
            self.insert(new.pod);
        }
    }
}

/// A pod as it is now, with its namespace's labels.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Held<'a> {
    pub(crate) pod: &'a PodInfo,
    pub(crate) namespace_labels: Option<&'a Labels>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    /// How many policies name the group: it is kept while one does.
    named_by: usize,
    set: MemberSet,
}

/// The members of every group the cluster's policies name, by where its pods may be.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Memberships {
    /// Groups of one namespace's pods, by that namespace.
    in_namespace: HashMap<String, HashMap<Members, Entry>>,
    /// Groups whose pods may be in any namespace.
    anywhere: HashMap<Members, Entry>,
}

impl Memberships {
    /// A group's members, if a policy names it.
    pub(crate) fn get(&self, members: &Members) -> Option<&MemberSet> {
        self.scope(members)?.get(members).map(|entry| &entry.set)
    }

    /// One more policy names `members`; `true` when the group is new, and its members must be
    /// found ([`Memberships::found`]).
    pub(crate) fn named(&mut self, members: &Members) -> bool {
        match self.scope_mut(members).get_mut(members) {
            Some(entry) => {
                entry.named_by += 1;
                false
            }
            None => true,
        }
    }

    /// The members of a group [`Memberships::named`] found new.
    pub(crate) fn found(&mut self, members: Members, set: MemberSet) {
        self.scope_mut(&members)
            .insert(members, Entry { named_by: 1, set });
    }

    /// One policy fewer names `members`: the group is forgotten with the last one.
    pub(crate) fn unnamed(&mut self, members: &Members) {
        let namespace = members.namespace().map(str::to_owned);
        let scope = self.scope_mut(members);
        if let Some(entry) = scope.get_mut(members) {
            entry.named_by -= 1;
            if entry.named_by == 0 {
                scope.remove(members);
            }
        }
        if let Some(namespace) = namespace
            && self
                .in_namespace
                .get(&namespace)
                .is_some_and(HashMap::is_empty)
        {
            self.in_namespace.remove(&namespace);
        }
    }

    /// A pod was added, changed or removed: `old` as the groups hold it, `new` as it is now.
    /// It costs a match per group that may hold a pod of its namespace.
    pub(crate) fn pod_changed(&mut self, old: Option<&PodInfo>, new: Option<Held<'_>>) {
        let Some(namespace) = new
            .map(|new| &new.pod.key.namespace)
            .or(old.map(|old| &old.key.namespace))
        else {
            return;
        };
        let local = self.in_namespace.get_mut(namespace.as_str());
        for (members, entry) in local
            .into_iter()
            .flat_map(|groups| groups.iter_mut())
            .chain(self.anywhere.iter_mut())
        {
            entry.set.update(members, old, new);
        }
    }

    /// A namespace's labels changed (`None`: it is gone): its `pods` are matched again against
    /// the groups that select namespaces by label, and no other.
    pub(crate) fn namespace_changed(&mut self, labels: Option<&Labels>, pods: &[&PodInfo]) {
        for (members, entry) in &mut self.anywhere {
            if !members.reads_namespace_labels() {
                continue;
            }
            for pod in pods {
                let now = Held {
                    pod,
                    namespace_labels: labels,
                };
                entry.set.update(members, Some(pod), Some(now));
            }
        }
    }

    fn scope(&self, members: &Members) -> Option<&HashMap<Members, Entry>> {
        match members.namespace() {
            Some(namespace) => self.in_namespace.get(namespace),
            None => Some(&self.anywhere),
        }
    }

    fn scope_mut(&mut self, members: &Members) -> &mut HashMap<Members, Entry> {
        match members.namespace() {
            Some(namespace) => self.in_namespace.entry(namespace.to_owned()).or_default(),
            None => &mut self.anywhere,
        }
    }
}
