//! The MCP server itself: tools, resources and prompts, behind rmcp's `ServerHandler`.

use crate::api::{Api, Caller};
use crate::tools::{self, Answer, Ctx, TOOLS};
use axum::extract::ConnectInfo;
use axum::http::header;
use axum::http::request::Parts;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, Implementation, ListPromptsResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, Prompt, PromptArgument, PromptMessage,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, Role, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Map, Value};
use std::net::SocketAddr;
use std::sync::Arc;

/// Thoth as an MCP server: one value per transport, cheap to clone (the HTTP transport builds one per request).
#[derive(Clone)]
pub struct Thoth {
    ctx: Ctx,
    /// The tools this server lists: those whose content is loaded.
    tools: Arc<Vec<Tool>>,
    /// Who calls when the transport says nothing (stdio: the local user).
    default_caller: Caller,
}

impl Thoth {
    /// The server over `state`: its tools answer from the state's facades and from `server::app(state)`.
    pub fn new(state: server::AppState) -> Thoth {
        let api = Api::new(server::app(state.clone()));
        let tools = TOOLS
            .iter()
            .filter(|t| tools::available(&state, t.needs).is_ok())
            .map(|t| {
                let Value::Object(schema) = (t.schema)() else {
                    unreachable!("every tool schema is an object")
                };
                let mut tool = Tool::new(t.name, t.description, schema);
                let mut hints = ToolAnnotations::default();
                hints.read_only_hint = Some(true);
                hints.open_world_hint = Some(false);
                tool.annotations = Some(hints);
                tool
            })
            .collect();
        Thoth {
            ctx: Ctx { state, api },
            tools: Arc::new(tools),
            default_caller: Caller::local(),
        }
    }

    /// The answer of tool `name` to `arguments` for `caller`, as the transports send it: structured content and
    /// its JSON text, a route's resource as JSON text (the FHIR operations, the HL7 v2 validation and
    /// conversion), or a tool error (`isError`) whose text says what to do. `None` for an unknown tool.
    pub async fn call(
        &self,
        caller: &Caller,
        name: &str,
        arguments: &Map<String, Value>,
    ) -> Option<CallToolResult> {
        let answer = tools::call(&self.ctx, caller, name, arguments).await?;
        Some(match answer {
            Ok(Answer::Value(value)) => {
                // Structured content is an object in MCP; a bare value is wrapped.
                let value = match value {
                    Value::Object(_) => value,
                    other => serde_json::json!({ "result": other }),
                };
                let mut result =
                    CallToolResult::success(vec![ContentBlock::text(value.to_string())]);
                result.structured_content = Some(value);
                result
            }
            // A route's resource as the route wrote it: text only (structured content is optional without an
            // output schema, and would cost reading the resource into a value and writing it twice more).
            Ok(Answer::Json(text)) => CallToolResult::success(vec![ContentBlock::text(text)]),
            Err(e) => CallToolResult::error(vec![ContentBlock::text(e.0)]),
        })
    }

    /// The caller of a request: from the HTTP request that carried it (peer address, credential), else the
    /// transport's default.
    fn caller(&self, context: &RequestContext<RoleServer>) -> Caller {
        match context.extensions.get::<Parts>() {
            Some(parts) => Caller {
                peer: parts
                    .extensions
                    .get::<ConnectInfo<SocketAddr>>()
                    .map(|c| c.0)
                    // No address known: not loopback, so that message data is never given by mistake.
                    .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0))),
                authorization: parts.headers.get(header::AUTHORIZATION).cloned(),
            },
            None => self.default_caller.clone(),
        }
    }
}

const INSTRUCTIONS: &str = "Thoth answers clinical terminology (SNOMED CT with Hermes-compatible tools, and FHIR \
$lookup/$validate-code/$expand/$subsumes/$translate over SNOMED CT, LOINC, ICD-10-CM and the HL7/FHIR code systems) \
and HL7 v2 questions (parse, validate, explain a field path, convert to FHIR). Never guess a code: search for it, \
then check it with validate_code. Lists are paged: follow next_offset.";

const ECL_GUIDE: &str = include_str!("guide-ecl.md");

impl ServerHandler for Thoth {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_prompts()
                .build(),
        )
        .with_server_info(Implementation::new(
            "thoth",
            self.ctx.state.info.version.clone(),
        ))
        .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = self.caller(&context);
        let arguments = request.arguments.unwrap_or_default();
        match self.call(&caller, &request.name, &arguments).await {
            Some(result) => Ok(result.into()),
            None => Err(ErrorData::invalid_params(
                format!(
                    "unknown tool {:?}; tools/list gives the {} tools of this server",
                    request.name,
                    self.tools.len()
                ),
                None,
            )),
        }
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let mut list = vec![
            Resource::new("thoth://guides/ecl", "ECL quick reference")
                .with_description("SNOMED CT Expression Constraint Language: the operators and refinements expand_ecl and the constraint arguments take")
                .with_mime_type("text/markdown"),
        ];
        if self.ctx.state.terminology.is_some() {
            list.push(
                Resource::new("thoth://codesystems", "Loaded code systems")
                    .with_description(
                        "Every code system this server answers for: url, version, title (JSON)",
                    )
                    .with_mime_type("application/json"),
            );
        }
        if self.ctx.state.snomed.is_some() {
            list.push(
                Resource::new("thoth://snomed/editions", "SNOMED CT editions")
                    .with_description("The SNOMED CT releases imported, with concept counts (JSON)")
                    .with_mime_type("application/json"),
            );
        }
        Ok(ListResourcesResult::with_all_items(list))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.as_str();
        let (text, mime) = match uri {
            "thoth://guides/ecl" => (ECL_GUIDE.to_string(), "text/markdown"),
            "thoth://codesystems" if self.ctx.state.terminology.is_some() => {
                let caller = self.caller(&context);
                let list = tools::code_systems(&self.ctx.api, &caller)
                    .await
                    .map_err(|e| ErrorData::internal_error(e.0, None))?;
                (list.to_string(), "application/json")
            }
            "thoth://snomed/editions" if self.ctx.state.snomed.is_some() => {
                let caller = self.caller(&context);
                let info = self
                    .call(&caller, "server_info", &Map::new())
                    .await
                    .and_then(|r| r.structured_content)
                    .unwrap_or_default();
                (info["snomed"].to_string(), "application/json")
            }
            _ => {
                return Err(ErrorData::resource_not_found(
                    format!("no resource {uri}; resources/list gives the resources of this server"),
                    None,
                ));
            }
        };
        Ok(
            ReadResourceResult::new(vec![ResourceContents::text(text, uri).with_mime_type(mime)])
                .into(),
        )
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(vec![
            Prompt::new(
                "find_code",
                Some("Find the code for a clinical phrase and check it against a value set"),
                Some(vec![
                    PromptArgument::new("phrase")
                        .with_description("The clinical phrase, e.g. 'heart attack'")
                        .with_required(true),
                    PromptArgument::new("value_set")
                        .with_description("Value set URL the code must belong to (optional)"),
                ]),
            ),
            Prompt::new(
                "explain_rejection",
                Some("Explain why an HL7 v2 message was rejected, field by field"),
                Some(vec![
                    PromptArgument::new("message")
                        .with_description("The HL7 v2 message")
                        .with_required(true),
                ]),
            ),
        ]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let arg = |name: &str| args.get(name).and_then(Value::as_str).map(str::to_string);
        let missing = |name: &str| {
            ErrorData::invalid_params(
                format!("prompt {} needs the argument `{name}`", request.name),
                None,
            )
        };
        let text = match request.name.as_str() {
            "find_code" => {
                let phrase = arg("phrase").ok_or_else(|| missing("phrase"))?;
                let check = match arg("value_set") {
                    Some(vs) => format!(
                        " Then call validate_code with system http://snomed.info/sct, the code and value_set {vs}, and say whether it belongs to that value set."
                    ),
                    None => " Then call validate_code with system http://snomed.info/sct and the code to confirm it is active and the display is right.".to_string(),
                };
                format!(
                    "Find the SNOMED CT concept for the clinical phrase \"{phrase}\". Call search with the phrase, \
                     pick the best match by its preferred term, and call fully_specified_name to confirm its semantic tag.{check} \
                     Answer with the code, its preferred term and the evidence. Never invent a code."
                )
            }
            "explain_rejection" => {
                let message = arg("message").ok_or_else(|| missing("message"))?;
                format!(
                    "This HL7 v2 message was rejected. Call hl7_validate on it, then for each error call hl7_explain \
                     with the issue's field path (and the message) to see what the field should hold. Explain each \
                     problem in plain words and say how to fix it.\n\n{message}"
                )
            }
            other => {
                return Err(ErrorData::invalid_params(
                    format!("no prompt {other:?}; prompts/list gives the prompts of this server"),
                    None,
                ));
            }
        };
        Ok(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)]).into())
    }
}
