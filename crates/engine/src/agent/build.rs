//! An [`Episode`] from the agent tables of a configuration
//! ([`crate::agent::config::AgentConfig`]): providers built, commands
//! wrapped, MCP servers started and their tools listed.

use super::blackbox::BlackBox;
use super::environment::JsonEnvironment;
use super::episode::{AgentUnderTest, Episode};
use super::user::User;
use crate::agent::config::{AgentConfig, AgentSpec, ToolDecl, ToolImpl, UserSpec};
use crate::tools::hosted::{missing, HostedFunctions};
use crate::tools::mcp::{McpClient, McpTool};
use crate::tools::{CommandTool, HostedTool, MockTool, Tool, ToolSpec, Toolbox};
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;

/// How long an MCP server may take to answer one message.
const MCP_TIMEOUT: Duration = Duration::from_secs(60);

/// `spec` without the arguments the harness adds (the agent is not asked
/// for them).
pub fn hide_arguments(mut spec: ToolSpec, added: &Map<String, Value>) -> ToolSpec {
    if let Some(props) = spec
        .parameters
        .get_mut("properties")
        .and_then(Value::as_object_mut)
    {
        for k in added.keys() {
            props.remove(k);
        }
    }
    if let Some(req) = spec
        .parameters
        .get_mut("required")
        .and_then(Value::as_array_mut)
    {
        req.retain(|r| r.as_str().is_none_or(|r| !added.contains_key(r)));
    }
    spec
}

async fn add_tool(
    toolbox: &mut Toolbox,
    d: &ToolDecl,
    hosted: &HostedFunctions,
) -> Result<(), String> {
    let single = |tool: Arc<dyn Tool>| (d.spec.clone().expect("validated: a named tool"), tool);
    let (spec, tool) = match &d.implementation {
        ToolImpl::Mock(answers) => single(Arc::new(MockTool {
            answers: answers.clone(),
        })),
        ToolImpl::Command { argv, timeout_s } => single(Arc::new(CommandTool {
            argv: argv.clone(),
            timeout: Duration::from_secs_f64(*timeout_s),
        })),
        ToolImpl::Python {
            function,
            timeout_s,
        } => {
            let name = d.spec.as_ref().map_or("", |s| s.name.as_str());
            let f = hosted
                .tools
                .get(name)
                .ok_or_else(|| missing(&format!("the tool `{name}`"), function))?;
            single(Arc::new(HostedTool {
                function: f.clone(),
                timeout: Duration::from_secs_f64(*timeout_s),
            }))
        }
        ToolImpl::Shop => {
            let shop = crate::sim::shop::toolbox();
            for spec in shop.specs() {
                let tool = shop.get(&spec.name).cloned().ok_or("the shop's tools")?;
                toolbox.add(spec.clone(), tool)?;
            }
            return Ok(());
        }
        ToolImpl::McpStdio { .. } | ToolImpl::McpHttp { .. } => {
            let client = match &d.implementation {
                ToolImpl::McpStdio { argv, env } => {
                    let env: Vec<(String, String)> = env.clone().into_iter().collect();
                    McpClient::stdio(argv, &env, MCP_TIMEOUT).await
                }
                ToolImpl::McpHttp { url } => McpClient::http(url, MCP_TIMEOUT).await,
                _ => unreachable!("matched above"),
            }
            .map_err(|e| e.to_string())?;
            let client = Arc::new(client);
            for spec in client.list_tools().await.map_err(|e| e.to_string())? {
                let tool: Arc<dyn Tool> = Arc::new(McpTool {
                    client: client.clone(),
                    extra_arguments: d.arguments.clone(),
                });
                toolbox.add(hide_arguments(spec, &d.arguments), tool)?;
            }
            return Ok(());
        }
    };
    toolbox.add(spec, tool)
}

/// Build the episode `c` describes.
pub async fn episode(c: &AgentConfig) -> Result<Episode, String> {
    let agent = match &c.agent {
        AgentSpec::Model { provider, system } => AgentUnderTest::Model {
            provider: provider.build().map_err(|e| format!("[agent]: {e}"))?,
            system: system.clone(),
            params: Map::new(),
        },
        AgentSpec::Command { argv, timeout_s } => AgentUnderTest::BlackBox(BlackBox::Command {
            argv: argv.clone(),
            timeout: Duration::from_secs_f64(*timeout_s),
        }),
        AgentSpec::Http { url, timeout_s } => AgentUnderTest::BlackBox(BlackBox::Http {
            url: url.clone(),
            timeout: Duration::from_secs_f64(*timeout_s),
        }),
        AgentSpec::Python {
            function,
            timeout_s,
        } => AgentUnderTest::BlackBox(BlackBox::Hosted {
            function: c
                .hosted
                .agent
                .clone()
                .ok_or_else(|| format!("[agent]: {}", missing("the agent", function)))?,
            timeout: Duration::from_secs_f64(*timeout_s),
        }),
    };
    let mut e = Episode::new(agent);
    e.user = match &c.user {
        UserSpec::Scripted => User::Scripted,
        UserSpec::Simulated { provider, prompt } => User::Simulated {
            provider: provider.build().map_err(|e| format!("[user]: {e}"))?,
            prompt: prompt.clone(),
        },
    };
    for d in &c.tools {
        add_tool(&mut e.tools, d, &c.hosted)
            .await
            .map_err(|m| format!("[[tool]]: {m}"))?;
    }
    e.environment = c
        .initial_state
        .clone()
        .map(|initial| Arc::new(JsonEnvironment { initial }) as _);
    e.max_turns = c.max_turns;
    e.stop = c.stop.clone();
    e.checks = c.checks.clone();
    e.user_checks = c.user_checks.clone();
    Ok(e)
}
