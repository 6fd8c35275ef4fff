"""The context endpoints of SPEC §2.6: `/api/sessions/{sid}/context…`. Each view: the shared
decorators for auth, idempotency, access and If-Match; the body calls one context service and
shapes the answer."""

from functools import wraps

from django.http import FileResponse
from rest_framework.decorators import api_view, parser_classes
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.response import Response

from workspaces.api.decorators import idempotent, limit_upload_size, with_body, with_revision, with_session
from workspaces.api.errors import error
from workspaces.selectors import parse_uuid

from .. import provenance, selectors, services
from ..models import ContextFile, StoredDigest
from ..serializers import file_urls, serialize_file
from .serializers import ContextOptionsBody

UPLOAD_PARSERS = [MultiPartParser, FormParser]


def _file_or_none(session, fid, related: tuple[str, ...] = ()) -> ContextFile | None:
    file_uuid = parse_uuid(fid)
    if file_uuid is None:
        return None
    return session.context_set.files.select_related(*related).filter(pk=file_uuid).first()


def with_file(*related: str):
    """Passes the session's file named by `fid` (with `related` joined in) in place of its id; 404 when
    the session has none by that id. Goes below with_session."""

    def decorate(view):
        @wraps(view)
        def wrapper(request, session, fid, **kwargs):
            file = _file_or_none(session, fid, related)
            if file is None:
                return error("file not found", 404)
            return view(request, session, file, **kwargs)

        return wrapper

    return decorate


@api_view(["GET", "PATCH"])
@parser_classes([JSONParser, FormParser, MultiPartParser])
@idempotent
@with_session
@with_revision
@with_body(ContextOptionsBody)
def context(request, session, expected_revision, body=None):
    context_set = session.context_set
    if request.method == "PATCH":
        manifest = services.set_options(context_set, **body, expected_revision=expected_revision).manifest
    else:
        manifest = selectors.manifest_of(context_set)
    response = Response(manifest)
    response["ETag"] = f'"{manifest["revision"]}"'
    return response


@api_view(["POST"])
@parser_classes(UPLOAD_PARSERS)
@limit_upload_size
@idempotent
@with_session
@with_revision
def context_files(request, session, expected_revision):
    uploads = [upload_of(f) for f in request.FILES.getlist("files")]
    result = services.upload_files(session.context_set, uploads, expected_revision=expected_revision)
    return _mutation_response(result, status=201)


@api_view(["GET", "PUT", "DELETE"])
@parser_classes(UPLOAD_PARSERS)
@limit_upload_size
@idempotent
@with_session
@with_revision
def context_file(request, session, fid, expected_revision):
    context_set = session.context_set
    if request.method == "PUT":
        upload = request.FILES.get("file")
        if upload is None:
            return error("multipart field 'file' is required", 400)
        result = services.replace_file(context_set, fid, upload_of(upload), expected_revision=expected_revision)
        return _mutation_response(result)
    if request.method == "DELETE":
        result = services.delete_file(context_set, fid, expected_revision=expected_revision)
        return _mutation_response(result)
    file = _file_or_none(session, fid)
    if file is None:
        return error("file not found", 404)
    return Response(serialize_file(file, session.pk))


@api_view(["POST"])
@idempotent
@with_session
@with_revision
def context_parse(request, session, expected_revision):
    result = services.request_parse(session.context_set, expected_revision=expected_revision)
    return _mutation_response(result, status=202)


@api_view(["POST"])
@idempotent
@with_session
@with_revision
def context_file_retry(request, session, fid, expected_revision):
    result = services.retry_file(session.context_set, fid, expected_revision=expected_revision)
    return _mutation_response(result, status=202)


@api_view(["GET"])
@with_session
@with_file()
def context_file_preview(request, session, file):
    return Response(
        {
            "file_id": str(file.id),
            "filename": file.filename,
            "format": file.format,
            "digest_status": file.digest_status,
            "spans": selectors.spans_of(file),
        }
    )


@api_view(["GET"])
@with_session
@with_file()
def context_file_download(request, session, file):
    try:
        stored = file.blob.open("rb")
    except FileNotFoundError:  # the object is gone from storage (S3: a 404 on it)
        return error("the stored file is missing", 404)
    return FileResponse(stored, as_attachment=True, filename=file.filename, content_type=file.mime_type)


@api_view(["GET"])
@with_session
@with_file("digest")
def context_file_digest(request, session, file):
    if file.digest is None:
        return error(f"no digest yet: {file.filename} is {file.digest_status}", 404, digest_status=file.digest_status)
    return Response(
        {
            "file_id": str(file.id),
            "filename": file.filename,
            "digest_status": file.digest_status,
            **_digest_fields(file.digest),
            **file_urls(file, session.pk),
            # A file's digest is always of its current text (a new text drops it).
            "source_links": _source_links(file.digest, provenance.current_versions(session.context_set.pk)),
        }
    )


@api_view(["GET"])
@with_session
def context_digest(request, session):
    context_set = session.context_set
    digest = context_set.aggregate_digest
    if digest is None:
        return error(
            f"no aggregate digest yet (status {context_set.aggregate_digest_status})",
            404,
            aggregate_digest_status=context_set.aggregate_digest_status,
        )
    return Response(
        {
            "revision": context_set.aggregate_revision,
            "context_revision": context_set.revision,
            "aggregate_digest_status": context_set.aggregate_digest_status,
            **_digest_fields(digest),
            "source_links": _source_links(digest, provenance.aggregate_versions(context_set)),
        }
    )


# --- helpers -----------------------------------------------------------------


def upload_of(uploaded) -> services.Upload:
    # The file object, not its bytes: Django spooled a large one to disk, and it goes to storage in chunks.
    return services.Upload(filename=uploaded.name, data=uploaded, content_type=uploaded.content_type)


def _digest_fields(digest: StoredDigest) -> dict:
    return {
        "digest_ref": str(digest.id),
        "digest_hash": digest.digest_hash,
        "prompt_version": digest.prompt_version,
        "provider": digest.provider,
        "model": digest.model,
        "dropped": digest.validation_report,
        "digest": digest.content,
    }


def _source_links(digest: StoredDigest, versions: dict[str, str]) -> dict:
    """{SourceRef: citation object} for every SourceRef the digest cites, pinned to `versions` ({filename: version})."""
    return provenance.digest_links(digest.content, versions)


def _mutation_response(result: services.MutationResult, status: int = 200) -> Response:
    manifest = result.manifest
    # The whole manifest (a page shows it as it shows a push), and this mutation's own diff.
    response = Response({**manifest, "diff": result.diff}, status=status)
    response["ETag"] = f'"{manifest["revision"]}"'
    return response
