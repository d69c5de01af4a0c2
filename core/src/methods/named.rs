//! The methods that take named values (an id, a query): stored responses and the models.

use super::{
    get, json, Answer, Door, Named, Operation, Param, ParamType, Route, Spec, Takes, Verb,
};
use crate::error::Result;
use crate::openai::TranscriptionAudio;
use crate::Client;

/// A stored response's id, the one value `responses.retrieve` and `responses.delete` take.
fn response_id(json: &str) -> Result<String> {
    Named::parse(json, &["response_id"])?.required("response_id")
}

/// `responses.retrieve`.
pub struct ResponsesRetrieve;

impl Operation for ResponsesRetrieve {
    type Request = String;
    const SPEC: Spec = Spec {
        name: "responses.retrieve",
        summary: "Retrieve a stored response",
        answer: "A `response`",
        takes: Takes::Named,
        required: &["response_id"],
        route: get("/responses/{response_id}"),
        ..Spec::DEFAULT
    };

    fn parse(json: &str, _: Option<TranscriptionAudio>) -> Result<Self::Request> {
        response_id(json)
    }

    fn run(client: &Client, id: Self::Request, _: Door) -> Result<Answer> {
        Ok(Answer::Json(client.responses.retrieve(&id)?.to_string()))
    }
}

/// `responses.delete`.
pub struct ResponsesDelete;

impl Operation for ResponsesDelete {
    type Request = String;
    const SPEC: Spec = Spec {
        name: "responses.delete",
        summary: "Delete a stored response",
        answer: "`{id, object: \"response.deleted\", deleted: true}`",
        takes: Takes::Named,
        required: &["response_id"],
        route: Some(Route {
            verb: Verb::Delete,
            path: "/responses/{response_id}",
            aliases: &[],
        }),
        ..Spec::DEFAULT
    };

    fn parse(json: &str, _: Option<TranscriptionAudio>) -> Result<Self::Request> {
        response_id(json)
    }

    fn run(client: &Client, id: Self::Request, _: Door) -> Result<Answer> {
        Ok(Answer::Json(client.responses.delete(&id)?.to_string()))
    }
}

/// What `responses.input_items.list` takes: a page of a stored response's input items.
#[derive(Debug, Clone, PartialEq)]
pub struct InputItemsPage {
    pub response_id: String,
    pub after: Option<String>,
    pub limit: Option<i64>,
    pub order: Option<String>,
}

/// `responses.input_items.list`.
pub struct ResponsesInputItemsList;

impl Operation for ResponsesInputItemsList {
    type Request = InputItemsPage;
    const SPEC: Spec = Spec {
        name: "responses.input_items.list",
        summary: "List a stored response's input items",
        answer: "A `list` of input items",
        takes: Takes::Named,
        required: &["response_id"],
        route: get("/responses/{response_id}/input_items"),
        params: &[
            Param {
                name: "after",
                kind: ParamType::TEXT,
            },
            Param {
                name: "limit",
                kind: ParamType::Integer {
                    minimum: Some(1),
                    maximum: Some(100),
                },
            },
            Param {
                name: "order",
                kind: ParamType::one_of(&["asc", "desc"]),
            },
        ],
        ..Spec::DEFAULT
    };

    fn parse(json: &str, _: Option<TranscriptionAudio>) -> Result<Self::Request> {
        // OpenAI's `include` names extra fields; input items here have none to add.
        let known = [
            "response_id",
            "after",
            "limit",
            "order",
            "include",
            "include[]",
        ];
        let mut named = Named::parse(json, &known)?;
        Ok(InputItemsPage {
            response_id: named.required("response_id")?,
            after: named.text("after")?,
            limit: named.integer("limit")?,
            order: named.text("order")?,
        })
    }

    fn run(client: &Client, page: Self::Request, _: Door) -> Result<Answer> {
        let items = client.responses.input_items(
            &page.response_id,
            page.after.as_deref(),
            page.limit,
            page.order.as_deref(),
        )?;
        Ok(Answer::Json(items.to_string()))
    }
}

/// `models.list`.
pub struct ModelsList;

impl Operation for ModelsList {
    type Request = ();
    const SPEC: Spec = Spec {
        name: "models.list",
        summary: "List models",
        answer: "A `list` of `model` objects",
        takes: Takes::Named,
        route: get("/models"),
        ..Spec::DEFAULT
    };

    fn parse(json: &str, _: Option<TranscriptionAudio>) -> Result<Self::Request> {
        Named::parse(json, &[])?;
        Ok(())
    }

    /// Over HTTP, a model file used by its path in-process (`ingle.serve` of a client that
    /// did) is no model of the API: its path is the server's business.
    fn run(client: &Client, _: (), door: Door) -> Result<Answer> {
        let mut list = client.models.list();
        if door == Door::Http {
            list.data
                .retain(|m| !std::path::Path::new(&m.id).is_absolute());
        }
        json(&list)
    }
}

/// `models.retrieve`.
pub struct ModelsRetrieve;

impl Operation for ModelsRetrieve {
    type Request = String;
    const SPEC: Spec = Spec {
        name: "models.retrieve",
        summary: "Retrieve a model",
        answer: "A `model` object",
        takes: Takes::Named,
        required: &["model"],
        route: get("/models/{*model}"),
        ..Spec::DEFAULT
    };

    fn parse(json: &str, _: Option<TranscriptionAudio>) -> Result<Self::Request> {
        Named::parse(json, &["model"])?.required("model")
    }

    fn run(client: &Client, model: Self::Request, _: Door) -> Result<Answer> {
        json(&client.models.retrieve(&model)?)
    }

    fn named_model(model: &Self::Request) -> Option<&str> {
        Some(model)
    }
}
