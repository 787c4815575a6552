//! What real clients send that the reference plugins accept, and where the line stays: GC's
//! `cni.dev/valid-attachments` may be absent (libcni's `cnitool gc`; see robustness.rs) but not
//! malformed, and cnitool's `CNI_NETNS` is passed through `filepath.Abs`, so a containerd-style
//! namespace GUID arrives as the last component of a path.

use cni_win_conformance::node::Call;
use serde_json::json;

use crate::{NETWORK, config};

#[test]
fn gc_with_a_malformed_list_is_still_refused_and_removes_nothing() {
    let node = crate::node("gc-malformed");
    let config = config(&node, "1.1.0");
    node.add("a", &node.namespace(), &config).result();
    for bad in [json!("a/eth0"), json!([{"containerID": 5}]), json!({})] {
        let mut gc = config.clone();
        gc["cni.dev/valid-attachments"] = bad;
        let msg = node.run(&Call::network("GC", &gc)).error(7);
        assert!(msg.contains("cni.dev/valid-attachments"), "{msg}");
        assert_eq!(node.endpoints(NETWORK).len(), 1);
        assert_eq!(node.reservations(NETWORK).len(), 1);
    }
}

/// ADD, CHECK and DEL with `CNI_NETNS` spelled as cnitool spells it: the endpoint is attached
/// to the namespace the last component names, and the result reports the value as given.
#[test]
fn a_netns_path_ending_in_a_namespace_guid_is_that_namespace() {
    let node = crate::node("netns-path");
    let config = config(&node, "1.0.0");
    for (pod, spelling) in [
        ("plain", "/some/dir/GUID"),
        ("braced", "/some/dir/{GUID}"),
        ("windows", r"C:\some\dir\GUID"),
        ("upper", r"C:\some\dir\{GUID}"),
    ] {
        let namespace = node.namespace();
        let guid = if pod == "upper" {
            namespace.to_uppercase()
        } else {
            namespace.clone()
        };
        let netns = spelling.replace("GUID", &guid);
        let result = node.add(pod, &netns, &config).result();
        assert_eq!(result["interfaces"][0]["sandbox"], netns.as_str(), "{pod}");
        let endpoint = node.endpoint(&format!("{pod}_{NETWORK}"));
        assert_eq!(
            endpoint.host_compute_namespace.to_string(),
            namespace,
            "{pod}"
        );
        let mut check = config.clone();
        check["prevResult"] = result;
        node.check(pod, &netns, &check).silent();
        node.del(pod, Some(&netns), &config).silent();
    }
    assert!(node.endpoints(NETWORK).is_empty() && node.reservations(NETWORK).is_empty());
}

#[test]
fn a_netns_path_not_ending_in_a_guid_is_refused_in_display_form() {
    let node = crate::node("netns-bad-path");
    let config = config(&node, "1.0.0");
    let guid = node.namespace();
    for netns in [
        r"C:\some\dir\not-a-guid".to_owned(),
        format!(r"C:\some\{guid}\pod"),
        format!("/some/dir/{guid}/"),
        format!("/some/dir/x{guid}"),
    ] {
        let msg = node.add("pod", &netns, &config).error(4);
        assert!(msg.contains(&format!("\"{netns}\"")), "{msg}");
        assert!(msg.contains("not an HCN namespace GUID"), "{msg}");
    }
    assert!(node.endpoints(NETWORK).is_empty() && node.reservations(NETWORK).is_empty());
}
