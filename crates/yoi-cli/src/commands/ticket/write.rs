//! `create`, `edit`, `comment`.

use yoi_engine::store::ops::{CommentRequest, CreateRequest, EditRequest};

use crate::cli::{CommentArgs, CreateArgs, EditArgs};
use crate::context::{read_input, Env};
use crate::error::CliError;
use crate::output;

pub fn create(env: &Env, a: &CreateArgs) -> Result<(), CliError> {
    let target = env.target("yoi ticket create")?;
    let body = a
        .body_file
        .as_deref()
        .map(read_input)
        .transpose()?
        .unwrap_or_default();
    let req = CreateRequest {
        title: a.title.clone(),
        body,
        depends_on: a.depends_on.clone(),
    };
    let out = target.create(&req)?;
    if a.json {
        output::json(&out);
    } else {
        println!("{}", out.ticket);
    }
    Ok(())
}

pub fn edit(env: &Env, a: &EditArgs) -> Result<(), CliError> {
    let target = env.target("yoi ticket edit")?;
    let req = EditRequest {
        title: a.title.clone(),
        body: a.body_file.as_deref().map(read_input).transpose()?,
    };
    let out = target.edit(&a.id, &req)?;
    output::outcome(&out, a.json);
    Ok(())
}

pub fn comment(env: &Env, a: &CommentArgs) -> Result<(), CliError> {
    let target = env.target("yoi ticket comment")?;
    let body = match (&a.message, &a.file) {
        (Some(m), None) => m.clone(),
        (None, Some(f)) => read_input(f)?,
        _ => {
            return Err(CliError::Usage(
                "give exactly one of --message or --file".into(),
            ))
        }
    };
    let req = CommentRequest {
        kind: a.kind.clone(),
        body,
    };
    let out = target.comment(&a.id, &req)?;
    output::outcome(&out, a.json);
    Ok(())
}
