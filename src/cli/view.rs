//! `ztfs view`: a local web page of a model (src/view/).

use std::net::IpAddr;

use super::args::ModelArg;
use crate::error::Result;
use crate::library::Options;

/// Serve a local web page of a model: its tensors as a tree, its metadata,
/// and each tensor's statistics, histogram, first values and heatmap.
///
/// Prints the page's URL (with a token every request must carry) and
/// serves until Ctrl-C. Bound to 127.0.0.1 unless --bind says otherwise.
#[derive(clap::Args, Debug)]
pub struct ViewCmd {
    #[command(flatten)]
    pub model: ModelArg,
    /// The port (default: any free one).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// The address to listen on. Anyone who can reach it and has the URL
    /// can read the model.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: IpAddr,
    /// Open the page in the desktop's browser (xdg-open).
    #[arg(long)]
    pub open: bool,
    /// Memory for a remote model's blocks and values, in MiB (as for
    /// `ztfs stats`).
    #[arg(long, default_value_t = 256)]
    pub cache_mib: u64,
}

impl ViewCmd {
    pub fn run(self) -> Result<()> {
        let model = super::open(&self.model.file)?;
        let opts = Options {
            cache_mib: self.cache_mib,
            ..Options::default()
        };
        let m = crate::Model::of(model, opts)?;
        let source = crate::store::shown(&self.model.file);
        let opts = crate::view::Options {
            bind: self.bind,
            port: self.port,
            open: self.open,
            keep: crate::stats::keep(&self.model.file, self.cache_mib),
        };
        crate::view::serve(m, source, opts)
    }
}
