//! Writing the rules: one `iptables-restore --noflush` per sync for the proxy's own chains,
//! the jumps to them from the built-in chains, and removing all of it (`rkube proxy
//! --cleanup`).

use std::collections::{BTreeSet, HashMap};
use std::io::Write as _;
use std::process::{Command, Stdio};

use crate::rules::{RuleConfig, Tables};

/// Why the rules could not be written.
#[derive(Debug, thiserror::Error)]
pub enum IptablesError {
    #[error("cannot run {program}: {source} (the proxy needs iptables and root, CAP_NET_ADMIN)")]
    Spawn { program: &'static str, source: std::io::Error },
    #[error("{program} failed: {message}")]
    Failed { program: &'static str, message: String },
}

type Result<T> = std::result::Result<T, IptablesError>;

/// A chain, by table.
pub type ChainName = (&'static str, String);

fn run(program: &'static str, args: &[&str], input: Option<&str>) -> Result<String> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| IptablesError::Spawn { program, source })?;
    if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
        stdin
            .write_all(input.as_bytes())
            .map_err(|source| IptablesError::Spawn { program, source })?;
    }
    let output =
        child.wait_with_output().map_err(|source| IptablesError::Spawn { program, source })?;
    if !output.status.success() {
        let message = String::from_utf8_lossy(&output.stderr).trim().to_string();
        return Err(IptablesError::Failed { program, message });
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Says plainly whether this process can write iptables rules (at startup).
pub fn check_available() -> Result<()> {
    run("iptables", &["-w", "-t", "nat", "-S", "POSTROUTING"], None).map(|_| ())
}

/// The chains of `table` whose names this proxy owns, from `iptables -S`.
fn owned_chains(config: &RuleConfig, table: &'static str) -> Result<BTreeSet<ChainName>> {
    let listing = run("iptables", &["-w", "-t", table, "-S"], None)?;
    Ok(listing
        .lines()
        .filter_map(|line| line.strip_prefix("-N "))
        .filter(|chain| config.owns(chain))
        .map(|chain| (table, chain.to_string()))
        .collect())
}

/// What one sync did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncStats {
    pub rules: usize,
    pub chains: usize,
    pub stale_chains: usize,
    pub restore_bytes: usize,
}

/// The proxy's rules as last written.
pub struct Writer {
    config: RuleConfig,
    /// The chains written by the last sync; None before the first (the tables are read
    /// then, so that a restarted proxy removes what its predecessor left).
    written: Option<BTreeSet<ChainName>>,
    /// The shared chains' rules as last written, which a partial sync leaves alone when
    /// they are the same (a changed endpoint changes none of them).
    shared: HashMap<ChainName, Vec<String>>,
}

impl Writer {
    pub fn new(config: RuleConfig) -> Writer {
        Writer { config, written: None, shared: HashMap::new() }
    }

    /// Whether the next sync must be a full one: nothing written yet, or the last write
    /// failed (what is in the tables is then unknown).
    pub fn needs_full(&self) -> bool {
        self.written.is_none()
    }

    pub fn config(&self) -> &RuleConfig {
        &self.config
    }

    /// Makes the proxy's chains exactly `tables` in one `iptables-restore` call, deleting
    /// the chains it made before that are no longer wanted; `reread` reads the tables for
    /// those (a periodic full resync) instead of trusting the last sync.
    pub fn sync(&mut self, tables: &Tables, reread: bool) -> Result<SyncStats> {
        // Unknown until this write succeeds: after a failure the next sync is a full one
        // that reads the tables.
        let written = self.written.take();
        let first = written.is_none();
        let existing = match (written, reread) {
            (Some(written), false) => written,
            _ => {
                let mut chains = owned_chains(&self.config, "filter")?;
                chains.extend(owned_chains(&self.config, "nat")?);
                chains
            }
        };
        let wanted = tables.chains();
        let stale: BTreeSet<ChainName> = existing.difference(&wanted).cloned().collect();
        let input = tables.restore_input(&stale);
        run("iptables-restore", &["-w", "5", "--noflush", "--counters"], Some(&input))?;
        if first || reread {
            self.ensure_jumps()?;
        }
        let stats = SyncStats {
            rules: tables.rule_count(),
            chains: wanted.len(),
            stale_chains: stale.len(),
            restore_bytes: input.len(),
        };
        self.remember_shared(tables);
        self.written = Some(wanted);
        Ok(stats)
    }

    /// Writes the chains of `tables` that changed (the per-port ones it has are taken as
    /// changed; the shared ones are compared with what was last written, unless
    /// `rewrite_shared`: the periodic sync restores them whatever happened to them) and
    /// deletes `deleted`, in one `iptables-restore` call. After a failure the next sync must
    /// be a full one ([`Writer::needs_full`]).
    pub fn sync_partial(
        &mut self,
        tables: &Tables,
        deleted: &BTreeSet<ChainName>,
        rewrite_shared: bool,
    ) -> Result<SyncStats> {
        let Some(mut written) = self.written.take() else {
            return self.sync(tables, true);
        };
        let shared: BTreeSet<ChainName> = self.config.top_level_chains().into_iter().collect();
        let keep = |table: &'static str, chains: &[(String, Vec<String>)]| {
            chains
                .iter()
                .filter(|(chain, rules)| {
                    let name = (table, chain.clone());
                    rewrite_shared
                        || !shared.contains(&name)
                        || self.shared.get(&name) != Some(rules)
                })
                .cloned()
                .collect::<Vec<_>>()
        };
        let changes =
            Tables { filter: keep("filter", &tables.filter), nat: keep("nat", &tables.nat) };
        let deleted: BTreeSet<ChainName> =
            deleted.iter().filter(|c| !changes.chains().contains(c)).cloned().collect();
        let stats = SyncStats {
            rules: changes.rule_count(),
            chains: changes.filter.len() + changes.nat.len(),
            stale_chains: deleted.len(),
            restore_bytes: 0,
        };
        if stats.chains == 0 && deleted.is_empty() {
            self.written = Some(written);
            return Ok(stats);
        }
        let input = changes.restore_input(&deleted);
        run("iptables-restore", &["-w", "5", "--noflush", "--counters"], Some(&input))?;
        written.extend(changes.chains());
        for chain in &deleted {
            written.remove(chain);
        }
        self.remember_shared(&changes);
        self.written = Some(written);
        Ok(SyncStats { restore_bytes: input.len(), ..stats })
    }

    fn remember_shared(&mut self, tables: &Tables) {
        for (table, chain, rules) in tables.iter() {
            let name = (table, chain.to_string());
            if self.config.is_top_level(chain) {
                self.shared.insert(name, rules.to_vec());
            }
        }
    }

    /// The jumps from the built-in chains, each added once (first in its chain, as
    /// kube-proxy puts them, so that Docker's own rules do not see service traffic first).
    fn ensure_jumps(&self) -> Result<()> {
        for (table, chain, rule) in self.config.jumps() {
            let words = split_rule(&rule);
            let mut check = vec!["-w", "-t", table, "-C", chain];
            check.extend(words.iter().map(String::as_str));
            if run("iptables", &check, None).is_ok() {
                continue;
            }
            let mut insert = vec!["-w", "-t", table, "-I", chain, "1"];
            insert.extend(words.iter().map(String::as_str));
            run("iptables", &insert, None)?;
        }
        Ok(())
    }
}

/// Removes everything a proxy with `config` made: the jumps from the built-in chains, then
/// its chains. Returns what it removed, one line each.
pub fn cleanup(config: &RuleConfig) -> Result<Vec<String>> {
    let mut removed = Vec::new();
    for table in ["filter", "nat"] {
        let listing = run("iptables", &["-w", "-t", table, "-S"], None)?;
        for line in listing.lines() {
            let Some(spec) = line.strip_prefix("-A ") else { continue };
            let mut words = split_rule(spec);
            if words.is_empty() || config.owns(&words[0]) {
                continue;
            }
            let jumps_to_ours = words.windows(2).any(|w| w[0] == "-j" && config.owns(&w[1]));
            if !jumps_to_ours {
                continue;
            }
            let chain = words.remove(0);
            let mut delete = vec!["-w", "-t", table, "-D", chain.as_str()];
            delete.extend(words.iter().map(String::as_str));
            run("iptables", &delete, None)?;
            removed.push(format!("{table} rule: -A {spec}"));
        }
        let chains = owned_chains(config, table)?;
        if chains.is_empty() {
            continue;
        }
        let mut input = format!("*{table}\n");
        for (_, chain) in &chains {
            input.push_str(&format!(":{chain} - [0:0]\n"));
        }
        for (_, chain) in &chains {
            input.push_str(&format!("-X {chain}\n"));
            removed.push(format!("{table} chain: {chain}"));
        }
        input.push_str("COMMIT\n");
        run("iptables-restore", &["-w", "5", "--noflush"], Some(&input))?;
    }
    Ok(removed)
}

/// A rule's words, quoted comments kept whole (without their quotes), as `iptables -S`
/// prints rules and as [`RuleConfig::jumps`] writes them.
fn split_rule(rule: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let mut any = false;
    for ch in rule.chars() {
        match ch {
            '"' => {
                quoted = !quoted;
                any = true;
            }
            ' ' if !quoted => {
                if any {
                    words.push(std::mem::take(&mut current));
                    any = false;
                }
            }
            _ => {
                current.push(ch);
                any = true;
            }
        }
    }
    if any {
        words.push(current);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_split_as_the_shell_would() {
        assert_eq!(
            split_rule("-m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES"),
            ["-m", "comment", "--comment", "kubernetes service portals", "-j", "KUBE-SERVICES"]
        );
        assert_eq!(split_rule("-A  X \"\" -j Y"), ["-A", "X", "", "-j", "Y"]);
    }
}
