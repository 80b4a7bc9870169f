//! A pod's name resolution, as upstream's kubelet sets it up:
//!
//! - [`pod_resolv_conf`]: the resolv.conf its `dnsPolicy` and `dnsConfig` ask for, from the
//!   kubelet's `--cluster-dns`, `--cluster-domain` and `--resolv-conf` (upstream's
//!   `pkg/kubelet/network/dns`), with upstream's limits and warning events;
//! - [`managed_hosts`] and [`host_network_hosts`]: the kubelet-managed `/etc/hosts` with the
//!   pod's IP, hostname and FQDN (`hostname.subdomain.ns.svc.domain`) and its hostAliases;
//! - [`hostname_and_domain`]: the pod's hostname and DNS domain, and the name its kernel
//!   gets (`setHostnameAsFQDN`).
//!
//! Both files are written into the pod's directory and bind-mounted into each of its
//! containers (the sandbox's resolv.conf shared by all of them, as containerd does), so
//! Docker's own files, which filter the node's loopback resolvers and fall back to public
//! ones, never reach a pod.

use std::io::Read;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{HostAlias, Pod, PodDNSConfigOption};

/// At most this many nameservers reach a pod (glibc reads no more).
pub const MAX_NAMESERVERS: usize = 3;
/// At most this many search domains (upstream's expanded DNS config, GA since 1.28).
pub const MAX_SEARCH_PATHS: usize = 32;
/// The search line's length limit, its domains joined by spaces.
pub const MAX_SEARCH_CHARS: usize = 2048;
/// A longer search domain makes some resolvers (glibc 2.28) abort: it is left out.
const MAX_SEARCH_DOMAIN: usize = 253;
/// The most of the node's resolv.conf that is read.
const MAX_RESOLV_CONF: u64 = 10 << 20;
/// The kernel's limit on a host name (upstream's FQDN check).
const MAX_NODENAME: usize = 64;

/// The kubelet's DNS flags.
#[derive(Clone, Debug)]
pub struct DnsSettings {
    /// `--cluster-dns`: the cluster DNS servers; none means ClusterFirst pods fall back to
    /// the node's resolvers (with a `MissingClusterDNS` warning).
    pub cluster_dns: Vec<IpAddr>,
    /// `--cluster-domain` (`cluster.local`); empty: no cluster search domains.
    pub cluster_domain: String,
    /// `--resolv-conf`: the node's resolver file the pods' are made from; `None` (the flag
    /// given as an empty string) means no host resolvers at all, as upstream.
    pub resolv_conf: Option<PathBuf>,
}

impl Default for DnsSettings {
    fn default() -> Self {
        DnsSettings {
            cluster_dns: Vec::new(),
            cluster_domain: "cluster.local".into(),
            resolv_conf: Some(PathBuf::from("/etc/resolv.conf")),
        }
    }
}

/// The three things a resolv.conf says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResolvConf {
    pub nameservers: Vec<String>,
    pub searches: Vec<String>,
    /// `name` or `name:value`.
    pub options: Vec<String>,
}

impl ResolvConf {
    /// Reads a resolv.conf as the resolver does: nameservers add up, the last `search` and
    /// `options` lines win; a search domain's trailing dot is dropped (so that `a.` and `a`
    /// count once).
    pub fn parse(text: &str) -> ResolvConf {
        let mut conf = ResolvConf::default();
        for line in text.lines() {
            let line = line.trim();
            if line.starts_with('#') {
                continue;
            }
            let mut words = line.split_whitespace();
            match words.next() {
                Some("nameserver") => conf.nameservers.extend(words.next().map(str::to_string)),
                Some("search") => {
                    conf.searches = words.map(|w| w.trim_end_matches('.').to_string()).collect()
                }
                Some("options") => conf.options = words.map(str::to_string).collect(),
                _ => {}
            }
        }
        conf
    }

    /// The file: `search`, one `nameserver` line each, `options` (containerd's layout).
    pub fn render(&self) -> String {
        let mut out = String::new();
        if !self.searches.is_empty() {
            out.push_str(&format!("search {}\n", self.searches.join(" ")));
        }
        for server in &self.nameservers {
            out.push_str(&format!("nameserver {server}\n"));
        }
        if !self.options.is_empty() {
            out.push_str(&format!("options {}\n", self.options.join(" ")));
        }
        out
    }
}

/// The node's resolvers from `--resolv-conf` (none without one).
pub fn host_resolv_conf(settings: &DnsSettings) -> std::io::Result<ResolvConf> {
    let Some(path) = &settings.resolv_conf else { return Ok(ResolvConf::default()) };
    let mut text = String::new();
    std::fs::File::open(path)?.take(MAX_RESOLV_CONF).read_to_string(&mut text)?;
    Ok(ResolvConf::parse(&text))
}

/// A warning event the DNS set-up asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// On the node rather than on the pod.
    pub on_node: bool,
    pub reason: &'static str,
    pub message: String,
}

/// What a pod's resolv.conf is, and the warnings making it gave.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodDns {
    pub conf: ResolvConf,
    pub warnings: Vec<Warning>,
}

fn without_duplicates(list: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    list.into_iter().filter(|s| seen.insert(s.clone())).collect()
}

/// `options` with the pod's `dnsConfig.options` merged in by name, later ones winning. Kept
/// in first-seen order (upstream goes through a map, so its order is arbitrary).
fn merge_options(existing: &[String], extra: &[PodDNSConfigOption]) -> Vec<String> {
    let mut merged: Vec<(String, Option<String>)> = Vec::new();
    let mut set = |name: &str, value: Option<&str>| {
        let value = value.filter(|v| !v.is_empty()).map(str::to_string);
        match merged.iter_mut().find(|(n, _)| n == name) {
            Some(entry) => entry.1 = value,
            None => merged.push((name.to_string(), value)),
        }
    };
    for option in existing {
        match option.split_once(':') {
            Some((name, value)) => set(name, Some(value)),
            None => set(option, None),
        }
    }
    for option in extra {
        set(option.name.as_deref().unwrap_or(""), option.value.as_deref());
    }
    merged
        .into_iter()
        .map(|(name, value)| match value {
            Some(value) => format!("{name}:{value}"),
            None => name,
        })
        .collect()
}

/// The search list cut to upstream's limits: 32 domains, none over 253 characters, 2048
/// characters in all (domains dropped from the end); whether anything was cut.
fn fit_searches(mut searches: Vec<String>) -> (Vec<String>, bool) {
    let mut cut = false;
    if searches.len() > MAX_SEARCH_PATHS {
        searches.truncate(MAX_SEARCH_PATHS);
        cut = true;
    }
    let before = searches.len();
    searches.retain(|s| s.len() <= MAX_SEARCH_DOMAIN);
    cut |= searches.len() != before;
    while searches.join(" ").len() > MAX_SEARCH_CHARS {
        searches.pop();
        cut = true;
    }
    (searches, cut)
}

/// The resolv.conf of `pod` (named `pod_key`, `name_namespace(uid)`, in messages) on a node
/// whose own resolvers are `host`.
pub fn pod_resolv_conf(
    pod: &Pod,
    settings: &DnsSettings,
    host: &ResolvConf,
    pod_key: &str,
) -> PodDns {
    let spec = pod.spec.as_ref();
    let host_network = spec.and_then(|s| s.host_network).unwrap_or(false);
    let policy = spec.and_then(|s| s.dns_policy.as_deref()).unwrap_or("ClusterFirst");
    let mut warnings = Vec::new();
    // ClusterFirst on the host's network is Default, as upstream; an unknown policy (the API
    // server rejects them) is ClusterFirst.
    let cluster = match policy {
        "None" => None,
        "Default" => Some(false),
        "ClusterFirst" if host_network => Some(false),
        _ => Some(true),
    };
    let mut conf = match cluster {
        None => ResolvConf::default(),
        Some(true) if !settings.cluster_dns.is_empty() => {
            let mut searches = Vec::new();
            if !settings.cluster_domain.is_empty() {
                let domain = &settings.cluster_domain;
                let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
                searches.push(format!("{namespace}.svc.{domain}"));
                searches.push(format!("svc.{domain}"));
                searches.push(domain.clone());
            }
            searches.extend(host.searches.iter().cloned());
            ResolvConf {
                nameservers: settings.cluster_dns.iter().map(IpAddr::to_string).collect(),
                searches: without_duplicates(searches),
                options: vec!["ndots:5".into()],
            }
        }
        Some(cluster) => {
            if cluster {
                let message = "kubelet does not have ClusterDNS IP configured and cannot create \
                               Pod using \"ClusterFirst\" policy. Falling back to \"Default\" \
                               policy.";
                warnings.push(Warning {
                    on_node: true,
                    reason: "MissingClusterDNS",
                    message: message.into(),
                });
                warnings.push(Warning {
                    on_node: false,
                    reason: "MissingClusterDNS",
                    message: format!("pod: {pod_key:?}. {message}"),
                });
            }
            if settings.resolv_conf.is_none() {
                // No host resolvers: the local machine's, as the resolver library would
                // assume, and no search.
                ResolvConf {
                    nameservers: vec!["127.0.0.1".into()],
                    searches: vec![".".into()],
                    options: host.options.clone(),
                }
            } else {
                host.clone()
            }
        }
    };
    if let Some(extra) = spec.and_then(|s| s.dns_config.as_ref()) {
        conf.nameservers.extend(extra.nameservers.iter().flatten().cloned());
        conf.nameservers = without_duplicates(std::mem::take(&mut conf.nameservers));
        conf.searches.extend(extra.searches.iter().flatten().cloned());
        conf.searches = without_duplicates(std::mem::take(&mut conf.searches));
        conf.options = merge_options(&conf.options, extra.options.as_deref().unwrap_or(&[]));
    }
    if conf.nameservers.len() > MAX_NAMESERVERS {
        conf.nameservers.truncate(MAX_NAMESERVERS);
        warnings.push(Warning {
            on_node: false,
            reason: "DNSConfigForming",
            message: format!(
                "Nameserver limits were exceeded, some nameservers have been omitted, the \
                 applied nameserver line is: {}",
                conf.nameservers.join(" ")
            ),
        });
    }
    let (searches, cut) = fit_searches(std::mem::take(&mut conf.searches));
    conf.searches = searches;
    if cut {
        warnings.push(Warning {
            on_node: false,
            reason: "DNSConfigForming",
            message: format!(
                "Search Line limits were exceeded, some search paths have been omitted, the \
                 applied search line is: {}",
                conf.searches.join(" ")
            ),
        });
    }
    PodDns { conf, warnings }
}

/// What is wrong with the node's resolv.conf for pods (upstream checks it at startup and
/// warns on the node): too many search domains to add the cluster's three, one too long,
/// or the line too long.
pub fn check_host_limits(settings: &DnsSettings, host: &ResolvConf) -> Option<String> {
    let path = settings.resolv_conf.as_ref()?.display().to_string();
    let mut room = MAX_SEARCH_PATHS;
    if !settings.cluster_domain.is_empty() {
        room -= 3;
    }
    if host.searches.len() > room {
        return Some(format!(
            "Resolv.conf file '{path}' contains search line consisting of more than {room} domains!"
        ));
    }
    if host.searches.iter().any(|s| s.len() > MAX_SEARCH_DOMAIN) {
        return Some(format!(
            "Resolv.conf file {path:?} contains a search path which length is more than allowed \
             {MAX_SEARCH_DOMAIN} chars!"
        ));
    }
    if host.searches.join(" ").len() > MAX_SEARCH_CHARS {
        return Some(format!(
            "Resolv.conf file '{path}' contains search line which length is more than allowed \
             {MAX_SEARCH_CHARS} chars!"
        ));
    }
    None
}

/// The pod's hostname and DNS domain, and its kernel's host name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodHostname {
    /// `spec.hostname`, else the pod's name, at most 63 characters.
    pub hostname: String,
    /// `<subdomain>.<namespace>.svc.<cluster domain>` when the pod has a subdomain.
    pub domain: Option<String>,
    /// What `hostname` prints in the pod: the FQDN with `setHostnameAsFQDN`, else the
    /// hostname.
    pub nodename: String,
}

/// The pod's [`PodHostname`]; the error upstream gives when its FQDN does not fit the
/// kernel's limit with `setHostnameAsFQDN`.
pub fn hostname_and_domain(pod: &Pod, cluster_domain: &str) -> Result<PodHostname, String> {
    let spec = pod.spec.as_ref();
    let name = pod.metadata.name.as_deref().unwrap_or("");
    let mut hostname = spec
        .and_then(|s| s.hostname.as_deref())
        .filter(|h| !h.is_empty())
        .unwrap_or(name)
        .to_string();
    if hostname.len() > 63 {
        // A host name does not end with `-` or `.`.
        hostname =
            hostname.chars().take(63).collect::<String>().trim_end_matches(['-', '.']).into();
        if hostname.is_empty() {
            return Err(format!("hostname for pod {name:?} was invalid"));
        }
    }
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
    let domain = spec
        .and_then(|s| s.subdomain.as_deref())
        .filter(|s| !s.is_empty())
        .map(|sub| format!("{sub}.{namespace}.svc.{cluster_domain}"));
    let as_fqdn = spec.and_then(|s| s.set_hostname_as_fqdn).unwrap_or(false);
    let nodename = match &domain {
        Some(domain) if as_fqdn => {
            let fqdn = format!("{hostname}.{domain}");
            if fqdn.len() > MAX_NODENAME {
                return Err(format!(
                    "failed to construct FQDN from pod hostname and cluster domain, FQDN {fqdn} \
                     is too long ({MAX_NODENAME} characters is the max, {} characters requested)",
                    fqdn.len()
                ));
            }
            fqdn
        }
        _ => hostname.clone(),
    };
    Ok(PodHostname { hostname, domain, nodename })
}

fn alias_lines(aliases: &[HostAlias]) -> String {
    if aliases.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n# Entries added by HostAliases.\n");
    for alias in aliases {
        let names: Vec<&str> = alias.hostnames.iter().flatten().map(String::as_str).collect();
        out.push_str(&format!("{}\t{}\n", alias.ip, names.join("\t")));
    }
    out
}

/// The kubelet-managed hosts file of a pod on the pod network: loopback and the usual IPv6
/// names, then each pod IP with the FQDN (when the pod has a subdomain) and the hostname,
/// then the hostAliases (upstream's layout).
pub fn managed_hosts(pod_ips: &[&str], name: &PodHostname, aliases: &[HostAlias]) -> String {
    let mut out = String::from(
        "# Kubernetes-managed hosts file.\n\
         127.0.0.1\tlocalhost\n\
         ::1\tlocalhost ip6-localhost ip6-loopback\n\
         fe00::0\tip6-localnet\n\
         fe00::0\tip6-mcastprefix\n\
         fe00::1\tip6-allnodes\n\
         fe00::2\tip6-allrouters\n",
    );
    for ip in pod_ips {
        match &name.domain {
            Some(domain) => {
                out.push_str(&format!("{ip}\t{}.{domain}\t{}\n", name.hostname, name.hostname))
            }
            None => out.push_str(&format!("{ip}\t{}\n", name.hostname)),
        }
    }
    out.push_str(&alias_lines(aliases));
    out
}

/// The hosts file of a pod on the node's network: the node's own, and the hostAliases.
pub fn host_network_hosts(node_hosts: &str, aliases: &[HostAlias]) -> String {
    format!("# Kubernetes-managed hosts file (host network).\n{node_hosts}{}", alias_lines(aliases))
}

/// Where a pod's resolv.conf lives in its directory.
pub fn resolv_conf_path(pod_dir: &Path) -> PathBuf {
    pod_dir.join("resolv.conf")
}

/// Where a pod's hosts file lives in its directory (upstream's name).
pub fn hosts_path(pod_dir: &Path) -> PathBuf {
    pod_dir.join("etc-hosts")
}

/// Writes `text` to `path` (mode 0644), making its directory.
pub fn write_file(path: &Path, text: &str) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, text)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(spec: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "web-0", "namespace": "shop", "uid": "u1"},
            "spec": spec,
        }))
        .unwrap()
    }

    fn settings(cluster_dns: &[&str]) -> DnsSettings {
        DnsSettings {
            cluster_dns: cluster_dns.iter().map(|s| s.parse().unwrap()).collect(),
            ..Default::default()
        }
    }

    fn host() -> ResolvConf {
        ResolvConf::parse(
            "# made by hand\nnameserver 192.0.2.1\nnameserver 192.0.2.2\nsearch old.example\n\
             search corp.example. lab.example\noptions timeout:2 rotate\n",
        )
    }

    #[test]
    fn parses_as_the_resolver_reads() {
        let conf = host();
        assert_eq!(conf.nameservers, ["192.0.2.1", "192.0.2.2"]);
        // The last search line wins, trailing dots dropped.
        assert_eq!(conf.searches, ["corp.example", "lab.example"]);
        assert_eq!(conf.options, ["timeout:2", "rotate"]);
        assert_eq!(
            conf.render(),
            "search corp.example lab.example\nnameserver 192.0.2.1\nnameserver 192.0.2.2\n\
             options timeout:2 rotate\n"
        );
    }

    #[test]
    fn cluster_first_uses_the_cluster_dns_and_its_search_domains() {
        let dns =
            pod_resolv_conf(&pod(json!({})), &settings(&["10.43.0.10"]), &host(), "web-0_shop(u1)");
        assert_eq!(dns.conf.nameservers, ["10.43.0.10"]);
        assert_eq!(
            dns.conf.searches,
            [
                "shop.svc.cluster.local",
                "svc.cluster.local",
                "cluster.local",
                "corp.example",
                "lab.example"
            ]
        );
        // The host's options are not kept.
        assert_eq!(dns.conf.options, ["ndots:5"]);
        assert!(dns.warnings.is_empty());
        // ClusterFirstWithHostNet on the host's network is the same.
        let with_host_net =
            pod(json!({"hostNetwork": true, "dnsPolicy": "ClusterFirstWithHostNet"}));
        let same = pod_resolv_conf(&with_host_net, &settings(&["10.43.0.10"]), &host(), "k");
        assert_eq!(same.conf, dns.conf);
    }

    #[test]
    fn default_and_host_network_cluster_first_take_the_nodes_resolvers() {
        for spec in [json!({"dnsPolicy": "Default"}), json!({"hostNetwork": true})] {
            let dns = pod_resolv_conf(&pod(spec), &settings(&["10.43.0.10"]), &host(), "k");
            assert_eq!(dns.conf, host());
            assert!(dns.warnings.is_empty());
        }
    }

    #[test]
    fn cluster_first_without_cluster_dns_falls_back_with_a_warning() {
        let dns = pod_resolv_conf(&pod(json!({})), &settings(&[]), &host(), "web-0_shop(u1)");
        assert_eq!(dns.conf, host());
        assert_eq!(dns.warnings.len(), 2);
        assert!(dns.warnings[0].on_node && dns.warnings[0].reason == "MissingClusterDNS");
        assert_eq!(
            dns.warnings[1].message,
            "pod: \"web-0_shop(u1)\". kubelet does not have ClusterDNS IP configured and cannot \
             create Pod using \"ClusterFirst\" policy. Falling back to \"Default\" policy."
        );
    }

    #[test]
    fn without_a_resolv_conf_the_local_resolver_is_assumed() {
        let settings = DnsSettings { resolv_conf: None, ..settings(&[]) };
        let dns = pod_resolv_conf(
            &pod(json!({"dnsPolicy": "Default"})),
            &settings,
            &ResolvConf::default(),
            "k",
        );
        assert_eq!(dns.conf.nameservers, ["127.0.0.1"]);
        assert_eq!(dns.conf.searches, ["."]);
    }

    #[test]
    fn none_takes_only_the_pods_dns_config() {
        let spec = json!({"dnsPolicy": "None", "dnsConfig": {
            "nameservers": ["198.51.100.7"],
            "searches": ["a.example", "a.example", "b.example"],
            "options": [{"name": "ndots", "value": "2"}, {"name": "edns0"}]
        }});
        let dns = pod_resolv_conf(&pod(spec), &settings(&["10.43.0.10"]), &host(), "k");
        assert_eq!(dns.conf.nameservers, ["198.51.100.7"]);
        assert_eq!(dns.conf.searches, ["a.example", "b.example"]);
        assert_eq!(dns.conf.options, ["ndots:2", "edns0"]);
    }

    #[test]
    fn dns_config_merges_into_the_policys_settings() {
        let spec = json!({"dnsConfig": {
            "nameservers": ["10.43.0.10", "198.51.100.7"],
            "searches": ["svc.cluster.local", "extra.example"],
            "options": [{"name": "ndots", "value": "1"}, {"name": "single-request"}]
        }});
        let dns = pod_resolv_conf(&pod(spec), &settings(&["10.43.0.10"]), &host(), "k");
        assert_eq!(dns.conf.nameservers, ["10.43.0.10", "198.51.100.7"]);
        assert_eq!(dns.conf.searches.last().map(String::as_str), Some("extra.example"));
        assert_eq!(dns.conf.searches.iter().filter(|s| *s == "svc.cluster.local").count(), 1);
        // By name, the pod's later value winning.
        assert_eq!(dns.conf.options, ["ndots:1", "single-request"]);
    }

    #[test]
    fn limits_cut_nameservers_and_searches_with_a_warning() {
        let host = ResolvConf::parse(
            "nameserver 192.0.2.1\nnameserver 192.0.2.2\nnameserver 192.0.2.3\nnameserver 192.0.2.4\n",
        );
        let dns =
            pod_resolv_conf(&pod(json!({"dnsPolicy": "Default"})), &settings(&[]), &host, "k");
        assert_eq!(dns.conf.nameservers, ["192.0.2.1", "192.0.2.2", "192.0.2.3"]);
        assert_eq!(
            dns.warnings,
            [Warning {
                on_node: false,
                reason: "DNSConfigForming",
                message: "Nameserver limits were exceeded, some nameservers have been omitted, \
                          the applied nameserver line is: 192.0.2.1 192.0.2.2 192.0.2.3"
                    .into()
            }]
        );

        let many: Vec<String> = (0..40).map(|i| format!("d{i}.example")).collect();
        let (fit, cut) = fit_searches(many.clone());
        assert!(cut);
        assert_eq!(fit, many[..32]);
        let long: Vec<String> = (0..20).map(|i| format!("{i:0>120}.example")).collect();
        let (fit, cut) = fit_searches(long);
        assert!(cut && fit.join(" ").len() <= MAX_SEARCH_CHARS, "{}", fit.len());
        assert_eq!(fit.len(), 15);
        let (fit, cut) = fit_searches(vec!["a".repeat(254), "b.example".into()]);
        assert!(cut);
        assert_eq!(fit, ["b.example"]);
        let (fit, cut) = fit_searches(vec!["a.example".into()]);
        assert!(!cut && fit == ["a.example"]);
    }

    #[test]
    fn host_limits_are_checked() {
        let many = ResolvConf {
            searches: (0..30).map(|i| format!("d{i}.example")).collect(),
            ..Default::default()
        };
        let message = check_host_limits(&DnsSettings::default(), &many).unwrap();
        assert!(message.contains("more than 29 domains"), "{message}");
        assert_eq!(check_host_limits(&DnsSettings::default(), &host()), None);
    }

    #[test]
    fn hostname_subdomain_and_fqdn() {
        let p = pod(json!({"hostname": "db", "subdomain": "backend"}));
        let name = hostname_and_domain(&p, "cluster.local").unwrap();
        assert_eq!(name.hostname, "db");
        assert_eq!(name.domain.as_deref(), Some("backend.shop.svc.cluster.local"));
        assert_eq!(name.nodename, "db");
        let hosts = managed_hosts(&["10.42.0.5"], &name, &[]);
        assert!(hosts.starts_with("# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n"));
        assert!(hosts.ends_with("10.42.0.5\tdb.backend.shop.svc.cluster.local\tdb\n"), "{hosts}");

        let p = pod(json!({"subdomain": "backend", "setHostnameAsFQDN": true}));
        let name = hostname_and_domain(&p, "cluster.local").unwrap();
        assert_eq!(name.nodename, "web-0.backend.shop.svc.cluster.local");
        let long =
            pod(json!({"hostname": "h".repeat(40), "subdomain": "s", "setHostnameAsFQDN": true}));
        let err = hostname_and_domain(&long, "cluster.local").unwrap_err();
        assert!(err.contains("is too long (64 characters is the max"), "{err}");

        // Long names are cut to 63 characters, without a trailing dash.
        let mut p = pod(json!({}));
        p.metadata.name = Some(format!("{}-x", "a".repeat(62)));
        let name = hostname_and_domain(&p, "cluster.local").unwrap();
        assert_eq!(name.hostname, "a".repeat(62));
        assert_eq!(
            managed_hosts(&["10.42.0.6"], &name, &[]).lines().last(),
            Some(&*format!("10.42.0.6\t{}", "a".repeat(62)))
        );
    }

    #[test]
    fn host_aliases_follow_the_pods_entries() {
        let aliases: Vec<HostAlias> = serde_json::from_value(json!([
            {"ip": "192.0.2.9", "hostnames": ["foo.local", "bar.local"]}
        ]))
        .unwrap();
        let name = hostname_and_domain(&pod(json!({})), "cluster.local").unwrap();
        let hosts = managed_hosts(&["10.42.0.5"], &name, &aliases);
        assert!(hosts.ends_with(
            "10.42.0.5\tweb-0\n\n# Entries added by HostAliases.\n192.0.2.9\tfoo.local\tbar.local\n"
        ));
        let on_host = host_network_hosts("127.0.0.1 localhost\n", &aliases);
        assert!(on_host.starts_with(
            "# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n\n# Entries"
        ));
    }
}
