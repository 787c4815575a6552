//! `--hnsctl PATH [--hns-network ARGS]`: the HNS catalogue on a fresh emulated host per case.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;

use conformance::Catalogue;
use conformance::cli::{Suite, SuiteRun, UsageError};
use thiserror::Error;

use crate::cases;
use crate::hns::{HnsFixture, L2BRIDGE_NETWORK, UnnamedNetwork};

/// The options `cni-win-conformance` adds to `cni-conformance`.
#[derive(Debug, Default)]
pub struct HnsSuite {
    hnsctl: Option<PathBuf>,
    controls: Option<PathBuf>,
    network: Option<String>,
}

/// Why the HNS options cannot make a run.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum HnsSuiteError {
    /// An HNS option given without `--hnsctl`, which every HNS case runs on.
    #[error("{option} needs --hnsctl")]
    NeedsHnsctl {
        /// The option given.
        option: &'static str,
    },
    /// `--hns-network` does not name the network.
    #[error("--hns-network: {0}")]
    NetworkArgs(#[from] UnnamedNetwork),
}

impl Suite for HnsSuite {
    type Error = HnsSuiteError;

    fn synopsis(&self) -> &'static str {
        "\n                       [--hnsctl PATH [--hns-network ARGS] [--hns-controls PATH]]"
    }

    fn options_help(&self) -> &'static str {
        "  --hnsctl PATH        run every case on a fresh HCN emulator host made with this hnsctl:
                       a network (--hns-network) and a namespace (CNI_NETNS); the config's
                       name becomes the network's, HCN_EMULATOR_STATE is set. Adds the HNS
                       catalogue (hns.*), which needs host-local with dataDir {{caseDir}}/ipam
  --hns-network ARGS   `hnsctl network create` arguments (default: an L2Bridge network,
                       \"--name cbr0 --type L2Bridge --subnet 10.244.1.0/24 --gateway 10.244.1.1\";
                       win-overlay's: \"--name flannel.4096 --type Overlay --subnet 10.244.1.0/24
                       --gateway 10.244.1.1 --vni 4096 --vxlan-port 4789 --provider-address IP\")
  --hns-controls PATH  a Linux hnsctl for the emulator's test controls (stats, fault), needed
                       when --hnsctl is a Windows hnsctl.exe run under Wine (default: --hnsctl)
"
    }

    fn option(
        &mut self,
        flag: &str,
        value: &mut dyn FnMut() -> Result<OsString, UsageError>,
    ) -> Result<bool, UsageError> {
        match flag {
            "--hnsctl" => self.hnsctl = Some(value()?.into()),
            "--hns-network" => self.network = Some(value()?.to_string_lossy().into_owned()),
            "--hns-controls" => self.controls = Some(value()?.into()),
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn listing(&self) -> Result<Catalogue, HnsSuiteError> {
        // The HNS cases' ids do not depend on the network, so they are listed without --hnsctl.
        Ok(cases::hns(&HnsFixture::new("hnsctl", L2BRIDGE_NETWORK)?))
    }

    fn prepare(&self) -> Result<Option<SuiteRun>, HnsSuiteError> {
        let fixture = match (&self.hnsctl, &self.network) {
            (Some(hnsctl), network) => {
                HnsFixture::new(hnsctl, network.as_deref().unwrap_or(L2BRIDGE_NETWORK))?
            }
            (None, Some(_)) => {
                return Err(HnsSuiteError::NeedsHnsctl {
                    option: "--hns-network",
                });
            }
            (None, None) if self.controls.is_some() => {
                return Err(HnsSuiteError::NeedsHnsctl {
                    option: "--hns-controls",
                });
            }
            (None, None) => return Ok(None),
        };
        let fixture = match &self.controls {
            Some(controls) => fixture.with_controls(controls),
            None => fixture,
        };
        Ok(Some(SuiteRun {
            cases: cases::hns(&fixture),
            fixture: Arc::new(fixture),
        }))
    }
}
