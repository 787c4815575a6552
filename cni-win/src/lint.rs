//! Validates a conflist with the plugins' own config code before install writes it: each
//! plugin's config is built as libcni builds it (the list's `cniVersion` and `name` added to
//! the entry) and loaded by the code its plugin runs at ADD (`cni::NetConf`, the
//! win-bridge/win-overlay config and, where the config has one, the IPAM section). A conflist
//! that passes is one the plugins accept; an install never writes one they would refuse.
//!
//! Keys the plugins do not read are ignored as Go ignores them; the Flannel templates carry
//! `subnetFile` and no `ipam`, which the plugins derive from subnet.env at ADD.

use cni::{NetConf, NetworkRequest};
use serde_json::{Map, Value};

use crate::error::Error;
use crate::shipped::Plugin;

/// Checks every plugin of `conflist`; the error names the entry and what the plugin said.
pub fn check(conflist: &Value) -> Result<(), Error> {
    let list = conflist
        .as_object()
        .ok_or_else(|| Error::new("a conflist must be a JSON object"))?;
    let plugins = list
        .get("plugins")
        .and_then(Value::as_array)
        .filter(|plugins| !plugins.is_empty())
        .ok_or_else(|| Error::new("the conflist has no \"plugins\" list"))?;
    for (index, entry) in plugins.iter().enumerate() {
        let at = |message: String| Error::new(format!("conflist plugins[{index}]: {message}"));
        let Value::Object(entry) = entry else {
            return Err(at("not a JSON object".to_owned()));
        };
        let conf = plugin_conf(list, entry);
        let bytes = serde_json::to_vec(&conf).expect("a JSON value always serializes");
        let config = NetConf::parse(&bytes).map_err(|e| at(e.to_string()))?;
        let plugin_type = config.plugin_type.clone();
        let Some(plugin) = Plugin::of(&plugin_type) else {
            return Err(at(format!("{plugin_type:?} is not a cni-win plugin")));
        };
        let request = NetworkRequest {
            config,
            stdin: bytes,
            cni_path: Vec::new(),
        };
        if let Err(refused) = plugin.configure(request, None).review() {
            return Err(at(format!("{plugin_type} refuses it: {refused}")));
        }
    }
    Ok(())
}

/// The config libcni hands plugin `entry` of `list`.
pub(crate) fn plugin_conf(list: &Map<String, Value>, entry: &Map<String, Value>) -> Value {
    let mut conf = entry.clone();
    for key in ["cniVersion", "name"] {
        if let Some(value) = list.get(key) {
            conf.insert(key.to_owned(), value.clone());
        }
    }
    Value::Object(conf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::templates::Template;
    use serde_json::json;

    #[test]
    fn every_template_passes_with_its_defaults() {
        for template in [Template::FlannelVxlan, Template::FlannelHostGw] {
            check(&template.render(&[]).unwrap()).unwrap();
        }
        let subnet = [("subnet".to_owned(), "10.244.1.0/24".to_owned())];
        for template in [Template::WinBridge, Template::WinOverlay] {
            check(&template.render(&subnet).unwrap()).unwrap();
        }
    }

    #[test]
    fn refuses_what_the_plugins_refuse_naming_the_entry() {
        let vni = [("vni".to_owned(), "4000".to_owned())];
        let err = check(&Template::FlannelVxlan.render(&vni).unwrap()).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("conflist plugins[0]: win-overlay refuses it"),
            "{err}"
        );

        let name = [("name".to_owned(), "../etc".to_owned())];
        assert!(check(&Template::FlannelHostGw.render(&name).unwrap()).is_err());

        let mut bad_policy = Template::FlannelHostGw.render(&[]).unwrap();
        bad_policy["plugins"][0]["policies"][0]["value"]["Settings"] =
            json!({"Exceptions": "10.0.0.0/8"});
        assert!(check(&bad_policy).is_err());

        let mut other = Template::FlannelHostGw.render(&[]).unwrap();
        other["plugins"][0]["type"] = json!("flannel");
        assert!(
            check(&other)
                .unwrap_err()
                .to_string()
                .contains("not a cni-win plugin")
        );
        assert!(check(&json!({"plugins": []})).is_err());
    }
}
